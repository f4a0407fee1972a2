"""Output an agent controls is streamed into a bounded buffer, never read whole (#28 R10).

An agent's command, a check running the agent's code, a CI job log, the claude CLI's event
stream: each can print as much as it likes (a red team printed 700 MB and the harness, which
read it whole and then cut it, grew to 2.1 GB). Here a stream is read in chunks; the first
``head`` bytes and the last ``tail`` bytes are kept and the middle is only counted, so memory
stays flat whatever the size. Whoever shows the result says how much was left out.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Iterator, Mapping
from typing import IO

CHUNK = 1 << 16


class Bounded:
    """The first ``head`` and the last ``tail`` bytes of a stream; ``dropped`` counts the rest."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_limit, self.tail_limit = max(0, head), max(0, tail)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail += chunk
        over = len(self.tail) - self.tail_limit
        if over > 0:
            self.dropped += over
            del self.tail[:over]

    def text(self, marker: str = "\n… ({dropped} bytes left out) …\n") -> str:
        """Head, then (when something was dropped) ``marker``, then tail, decoded leniently."""
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        if not self.dropped:
            return head + tail
        return head + marker.format(dropped=self.dropped) + tail


def drain(pipes: Mapping[IO[bytes], Bounded], deadline: float | None) -> bool:
    """Read every pipe into its buffer until all of them are closed (True) or the monotonic
    ``deadline`` passes (False; what came so far is in the buffers)."""
    selector = selectors.DefaultSelector()
    try:
        for pipe in pipes:
            selector.register(pipe, selectors.EVENT_READ)
        while selector.get_map():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            for key, _ in selector.select(left):
                chunk = os.read(key.fd, CHUNK)
                if chunk:
                    pipes[key.fileobj].feed(chunk)  # type: ignore[index]
                else:
                    selector.unregister(key.fileobj)
        return True
    finally:
        selector.close()


def drain_and_wait(proc: subprocess.Popen[bytes], pipes: Mapping[IO[bytes], Bounded],
                   timeout: float) -> bool:  # fmt: skip
    """:func:`drain` ``proc``'s pipes, then wait for it to end, both within ``timeout`` seconds
    (what ``communicate(timeout=…)`` did, without holding the output): False when time ran
    out (the process may still run; the caller kills it)."""
    deadline = time.monotonic() + max(0.0, timeout)
    if not drain(pipes, deadline):
        return False
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return False
    return True


def lines(pipe: IO[bytes], limit: int) -> Iterator[bytes]:
    """The lines of ``pipe``, each read at most ``limit`` bytes at a time: a longer line is
    skipped whole (read through, never held) instead of growing a buffer without end."""
    while True:
        line = pipe.readline(limit)
        if not line:
            return
        if len(line) >= limit and not line.endswith(b"\n"):
            while True:  # the rest of the over-long line
                more = pipe.readline(limit)
                if not more or more.endswith(b"\n"):
                    break
            continue
        yield line
