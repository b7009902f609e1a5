"""A live Python worker in the sandbox, for the ``python`` tool's sessions.

:class:`WorkerSession` sends code blocks to the worker (see ``python_worker.py`` for the
protocol) and reads its stdout and stderr all the time, cutting them into blocks at the
end markers; a block's output is kept within a limit however much it prints.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from typing import Any

from pymanus.sandbox import Limits, Sandbox, SandboxedProcess
from pymanus.sandbox.process import describe_exit
from pymanus.sandbox.streams import OutputBuffer, wait_exit

SEPARATOR = b"\x1e"
_CARRY_LIMIT = 65536


@dataclass(frozen=True)
class BlockOutcome:
    """What one code block did."""

    stdout: str
    stderr: str
    status: dict[str, Any]
    """The worker's report: ``ok``, and ``error`` / ``module`` / ``exit`` when relevant."""
    timed_out: bool = False
    ended: str | None = None
    """Set when the worker process itself ended (crash or limit): how it ended."""


class WorkerSession:
    """One live worker: sends code blocks, reads their output up to the end markers."""

    def __init__(self, process: SandboxedProcess, token: str, limit: int, limits: Limits) -> None:
        self.process = process
        self.limits = limits
        marker = SEPARATOR + token.encode() + b":"
        self._stdout = MarkedStream(process.process.stdout, marker, limit)
        self._stderr = MarkedStream(process.process.stderr, marker, limit)
        self._lock = asyncio.Lock()
        self._loop = asyncio.get_running_loop()

    @classmethod
    async def start(
        cls, sandbox: Sandbox, argv: list[str], token: str, env: dict[str, str], limit: int
    ) -> WorkerSession:
        """Start a worker in ``sandbox``; ``limit`` caps each block's output per stream."""
        process = await sandbox.spawn(argv, env=env, cpu_hard_unlimited=True)
        return cls(process, token, min(limit, sandbox.output_limit), sandbox.limits)

    @property
    def usable(self) -> bool:
        """Whether the worker runs, in this event loop (its pipes belong to the loop that started it)."""
        return self.process.process.returncode is None and self._loop is asyncio.get_running_loop()

    async def run(self, code: str, limit: float) -> BlockOutcome:
        """Run one block, waiting at most ``limit`` seconds (then the caller must close the session)."""
        async with self._lock:
            stdin = self.process.process.stdin
            if stdin is None:
                return await self._ended()
            try:
                stdin.write(frame(code))
                await stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                return await self._ended()
            blocks = asyncio.ensure_future(self._next_blocks())
            exited = asyncio.ensure_future(wait_exit(self.process.process, None))
            done, _ = await asyncio.wait({blocks, exited}, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
            exited.cancel()
            if blocks not in done:
                blocks.cancel()
                if exited in done:
                    return await self._ended()
                return BlockOutcome(self._stdout.partial(), self._stderr.partial(), {"ok": False}, timed_out=True)
            out, err = blocks.result()
            if out is None or err is None:
                return await self._ended()
            return BlockOutcome(out[0], err[0], parse_status(err[1]))

    async def _next_blocks(self) -> tuple[tuple[str, bytes] | None, tuple[str, bytes] | None]:
        return await self._stdout.next_block(), await self._stderr.next_block()

    async def _ended(self) -> BlockOutcome:
        await wait_exit(self.process.process, 2.0)
        code = self.process.returncode
        description = "it stopped responding" if code is None else describe_exit(code, self.limits)
        return BlockOutcome(self._stdout.partial(), self._stderr.partial(), {"ok": False}, ended=description)

    async def aclose(self) -> None:
        """Kill the worker and stop reading its pipes."""
        await self.process.aclose()
        self._stdout.cancel()
        self._stderr.cancel()


class MarkedStream:
    """Reads one worker stream all the time, cutting it into blocks at the end markers."""

    def __init__(self, stream: asyncio.StreamReader | None, marker: bytes, limit: int) -> None:
        self._marker = marker
        self._limit = limit
        self._buffer = OutputBuffer(limit)
        self._carry = b""
        self._blocks: asyncio.Queue[tuple[str, bytes] | None] = asyncio.Queue()
        self._task = asyncio.ensure_future(self._pump(stream))

    async def next_block(self) -> tuple[str, bytes] | None:
        """The output and marker payload of the next finished block; ``None`` at end of stream."""
        return await self._blocks.get()

    def partial(self) -> str:
        """What the current (unfinished) block printed so far."""
        if self._carry:
            self._buffer.feed(self._carry)
            self._carry = b""
        return self._buffer.text()

    def cancel(self) -> None:
        """Stop reading the stream."""
        self._task.cancel()

    async def _pump(self, stream: asyncio.StreamReader | None) -> None:
        try:
            while stream is not None and (chunk := await stream.read(65536)):
                self._scan(self._carry + chunk)
        finally:
            self._blocks.put_nowait(None)

    def _scan(self, data: bytes) -> None:
        while True:
            start = data.find(self._marker)
            if start < 0:
                keep = len(self._marker) - 1  # a marker may be split across reads
                self._buffer.feed(data[:-keep] if len(data) > keep else b"")
                self._carry = data[-keep:] if len(data) > keep else data
                return
            end = data.find(SEPARATOR, start + len(self._marker))
            if end < 0:
                if len(data) - start > _CARRY_LIMIT:  # not a real marker: plain output
                    self._buffer.feed(data)
                    self._carry = b""
                else:
                    self._buffer.feed(data[:start])
                    self._carry = data[start:]
                return
            self._buffer.feed(data[:start])
            self._blocks.put_nowait((self._buffer.text(), data[start + len(self._marker) : end]))
            self._buffer = OutputBuffer(self._limit)
            data = data[end + 1 :]


def frame(code: str) -> bytes:
    """A code block as the worker reads it: ``<byte length>\\n<source>``."""
    data = code.encode("utf-8", errors="replace")
    return f"{len(data)}\n".encode() + data


def parse_status(payload: str | bytes | None) -> dict[str, Any]:
    """The worker's JSON status of a block; a failure when missing or unreadable."""
    if payload is None:
        return {"ok": False}
    with contextlib.suppress(ValueError):
        status = json.loads(payload)
        if isinstance(status, dict):
            return status
    return {"ok": False}
