"""Reading and writing the pipes of sandboxed processes without trusting them.

Output is read in chunks and kept within a limit while it arrives (a command printing
gigabytes costs no memory), and a process's exit is detected without waiting for every
process that inherited its pipes.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

_READ_CHUNK = 65536


class OutputBuffer:
    """Keeps the head and the tail of a byte stream within a limit; counts what is cut.

    Nothing beyond the limit is stored, so a command printing gigabytes costs no memory.
    The tail is kept because the end of an output (a result, a traceback) often matters
    most. The limit counts bytes, which are characters for ASCII output.
    """

    def __init__(self, limit: int) -> None:
        self.total = 0
        self._tail_limit = limit // 4
        self._head_limit = limit - self._tail_limit
        self._head = bytearray()
        self._tail = bytearray()

    def feed(self, data: bytes) -> None:
        """Add bytes read from the stream."""
        self.total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            if len(self._tail) > self._tail_limit:
                del self._tail[: len(self._tail) - self._tail_limit]

    @property
    def truncated(self) -> bool:
        """Whether some of the output is not in :meth:`text`."""
        return self.total > len(self._head) + len(self._tail)

    def text(self) -> str:
        """The kept output, with a note where bytes were cut."""
        if not self.truncated:
            return (self._head + self._tail).decode("utf-8", errors="replace")
        tail = bytes(self._tail)
        while tail and tail[0] & 0xC0 == 0x80:  # drop a character cut in half
            tail = tail[1:]
        cut = self.total - len(self._head) - len(tail)
        head = self._head.decode("utf-8", errors="replace")
        return f"{head}\n[... {cut:,} bytes of output cut ...]\n{tail.decode('utf-8', errors='replace')}"


async def read_capped(stream: asyncio.StreamReader | None, limit: int) -> tuple[str, bool, int]:
    """Read a stream to its end through an :class:`OutputBuffer`: (text, truncated, total bytes)."""
    buffer = OutputBuffer(limit)
    if stream is not None:
        while chunk := await stream.read(_READ_CHUNK):
            buffer.feed(chunk)
    return buffer.text(), buffer.truncated, buffer.total


async def feed(pipe: asyncio.StreamWriter | None, data: bytes | str | None) -> None:
    """Write ``data`` to a process's stdin and close it; a process that stops reading is fine."""
    if pipe is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        if data:
            pipe.write(data.encode() if isinstance(data, str) else data)
            await pipe.drain()
        pipe.close()


async def wait_exit(process: asyncio.subprocess.Process, limit: float | None) -> bool:
    """Wait until ``process`` itself exits; ``False`` if it still runs after ``limit`` seconds.

    Unlike ``Process.wait()`` on Python 3.11, this does not also wait for every process
    that inherited the output pipes (a background job would make it hang).
    """
    deadline = None if limit is None else time.monotonic() + limit
    pause = 0.001
    while process.returncode is None:
        if deadline is not None and time.monotonic() >= deadline:
            return False
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.02)
    return True


def fit(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping its head and tail."""
    if len(text) <= limit:
        return text
    tail = limit // 4
    head = limit - tail
    return f"{text[:head]}\n[... {len(text) - head - tail:,} characters cut ...]\n{text[-tail:]}"
