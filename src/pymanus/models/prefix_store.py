"""Evaluated prompt prefixes kept on disk, so a new process skips the system prompt's evaluation.

Every run of an agent starts with the same system prompt and tool list: on the default pack
about 1,800 tokens, 18 s of prompt evaluation on 2 cores before the first token of every
``pymanus run``. Within one process the KV cache already reuses it; this store carries it
across processes. After a prompt's shared head (the part that a system-only rendering has in
common with it) is evaluated, the sequence's KV state is saved with llama.cpp's
``llama_state_seq_save_file``; a later process with the same model file, context size,
llama-cpp-python version and head tokens loads it (a few hundredths of a second) instead.
Files hold tens of MB (about 28 KB per token on the default pack); the store keeps the
:data:`KEPT_FILES` most recently used. Any failure only costs the evaluation it would have
saved: it is logged, never raised.
"""

from __future__ import annotations

import array
import ctypes
import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pymanus.models.local_runtime import _Runtime

logger = logging.getLogger("pymanus.models.local")

MIN_TOKENS = 256
"""Heads shorter than this are evaluated again: a file is not worth a second of work."""
KEPT_FILES = 4


@dataclass(frozen=True)
class PrefixStore:
    """A directory of saved KV states, one per (model, context, head tokens)."""

    directory: Path

    def load(self, runtime: _Runtime, tokens: list[int]) -> bool:
        """Put the saved state for ``tokens`` in the context; whether there was a sound one.

        When a file exists but does not load, the context is left empty (``n_tokens`` 0).
        """
        path = self._file(runtime, tokens)
        if not path.is_file():
            return False
        c, llm, n = _llama(), runtime.llm, len(tokens)
        memory = c.llama_get_memory(llm.ctx)
        c.llama_memory_seq_rm(memory, 0, -1, -1)  # the context now holds nothing
        llm.n_tokens = 0
        found, count = (c.llama_token * n)(), ctypes.c_size_t(0)
        read = c.llama_state_seq_load_file(llm.ctx, os.fsencode(path), 0, found, n, ctypes.byref(count))
        if not read or count.value != n or list(found) != tokens:
            logger.warning("saved prompt state %s does not load; it is removed", path.name)
            c.llama_memory_seq_rm(memory, 0, -1, -1)
            path.unlink(missing_ok=True)
            return False
        llm.input_ids[:n] = tokens
        llm.n_tokens = n
        os.utime(path)  # most recently used: kept longest
        return True

    def save(self, runtime: _Runtime, tokens: list[int]) -> None:
        """Save the context's state, which must hold exactly ``tokens``."""
        c, llm, n = _llama(), runtime.llm, len(tokens)
        path = self._file(runtime, tokens)
        partial = path.with_name(f"{path.name}.{os.getpid()}.part")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if not c.llama_state_seq_save_file(llm.ctx, os.fsencode(partial), 0, (c.llama_token * n)(*tokens), n):
                raise OSError("llama.cpp wrote nothing")
            os.replace(partial, path)  # whole files only, even with processes racing
            for old in sorted(self.directory.glob("*.kv"), key=_mtime)[:-KEPT_FILES]:
                old.unlink(missing_ok=True)
        except OSError as exc:
            logger.warning("cannot save the prompt state in %s: %s", self.directory, exc)
            partial.unlink(missing_ok=True)

    def _file(self, runtime: _Runtime, tokens: list[int]) -> Path:
        stat = runtime.path.stat()
        identity = f"{runtime.path}|{stat.st_size}|{stat.st_mtime_ns}|{runtime.n_ctx}|{_llama().__version__}"
        digest = hashlib.sha256(identity.encode())
        digest.update(array.array("i", tokens).tobytes())
        return self.directory / f"{digest.hexdigest()[:32]}.kv"


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _llama() -> Any:
    import llama_cpp  # loaded already: a store is used only by a loaded runtime

    return llama_cpp
