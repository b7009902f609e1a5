"""A running total that nothing adds to: ``total = 0`` before a loop, and no ``total += ...`` in it.

word_counts run 231: the 1.5B set ``total_words = 0``, added each file's lines to ``total_lines``
in its loop but nothing to ``total_words``, and wrote the total row as 0. Told that the rows sum
to 54, it ran the same code again. The python tool and the file tools name the line instead
(see :func:`pymanus.tools.builtin.code_lint.code_mistakes`).
"""

from __future__ import annotations

import ast


def total_never_added(source: str) -> str | None:
    """``"line 4 sets total_words = 0 ..."`` when code sets a name to 0 before a loop, never changes it
    (no ``+=``, no other assignment, no parameter of that name), does not use it in the loop and reads it
    after: the shape of a running total the loop was meant to add to."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    loops = [node for node in ast.walk(tree) if isinstance(node, ast.For | ast.AsyncFor | ast.While)]
    stores: dict[str, int] = {}
    zeroed: dict[str, int] = {}
    reads: dict[str, list[int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            reads.setdefault(node.id, []).append(node.lineno)
        elif isinstance(node, ast.Name):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, ast.arg):
            stores[node.arg] = stores.get(node.arg, 0) + 2  # a parameter takes other values
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and type(node.value.value) in (int, float)
            and node.value.value == 0
        ):
            zeroed.setdefault(node.targets[0].id, node.lineno)
    for name, line in sorted(zeroed.items(), key=lambda item: item[1]):
        if stores.get(name) != 1:
            continue
        for loop in loops:
            end = loop.end_lineno or loop.lineno
            after = [read for read in reads.get(name, []) if read > end]
            if line < loop.lineno and after and not any(loop.lineno <= read <= end for read in reads[name]):
                return (
                    f"line {line} sets {name} = 0 and nothing changes it, not even the loop at line {loop.lineno}, "
                    f"so it is still 0 where line {after[0]} uses it: to add up values, add each one to it in the "
                    f"loop ({name} += value)"
                )
    return None
