"""The live status line of a long command on a terminal (investigate, dev-agent): what the
run is doing now — iteration, confidence, the role and step of the model call, tokens, time —
redrawn in place on stderr. Silent under cron, with ``--json``, or when stderr is a pipe: the
logs and the final result say everything there."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from harness_cli import progress
from harness_cli.output import OPTIONS

TICK_S = 1.0
"""How often the live line is redrawn without an event: the clock on it is in seconds."""


class _State:
    def __init__(self, title: str, max_iterations: int | None) -> None:
        self.title = title
        self.max_iterations = max_iterations
        self.started = time.monotonic()
        self.iteration = 1 if max_iterations else 0
        self.confidence: int | None = None
        self.role = ""
        self.step = "starting"
        self.tokens = 0

    def line(self) -> str:
        parts = [self.title]
        if self.iteration:
            parts.append(f"iteration {self.iteration}/{self.max_iterations}")
        if self.confidence is not None:
            parts.append(f"confidence {self.confidence}%")
        parts.append(f"{self.role}: {self.step}" if self.role else self.step)
        if self.tokens:
            parts.append(f"{self.tokens:,} tokens")
        elapsed = int(time.monotonic() - self.started)
        parts.append(f"{elapsed // 60}m{elapsed % 60:02d}s")
        return " · ".join(parts)


class _Events(logging.Handler):
    """The loop's own log events: a finished iteration carries its number and confidence."""

    def __init__(self, state: _State, redraw: Any) -> None:
        super().__init__(logging.INFO)
        self.state, self.redraw = state, redraw

    def emit(self, record: logging.LogRecord) -> None:
        fields = getattr(record, "fields", None) or {}
        if record.msg == "iteration" and isinstance(fields.get("iteration"), int):
            self.state.iteration = fields["iteration"] + 1
            if self.state.max_iterations:
                self.state.iteration = min(self.state.iteration, self.state.max_iterations)
            if isinstance(fields.get("confidence"), int):
                self.state.confidence = fields["confidence"]
            self.state.step = f"iteration {fields['iteration']} → {fields.get('decision', '?')}"
            self.redraw()


@contextmanager
def live(title: str, *, max_iterations: int | None = None) -> Iterator[None]:
    if OPTIONS.json or not sys.stderr.isatty():
        yield
        return
    from rich.console import Console
    from rich.markup import escape

    state = _State(title, max_iterations)
    console = Console(stderr=True, highlight=False)
    with console.status(escape(state.line())) as status:

        def redraw() -> None:
            status.update(escape(state.line()))

        def on_run(kind: str, data: dict[str, Any]) -> None:
            if kind != "run":
                return
            state.role = str(data.get("role") or state.role)
            if data.get("step"):
                state.step = str(data["step"])
            state.tokens += int(data.get("tokens") or 0)
            redraw()

        handler = _Events(state, redraw)
        root = logging.getLogger("harness")
        root.addHandler(handler)
        stop = threading.Event()

        def tick() -> None:  # the elapsed time moves while a model call is silent
            while not stop.wait(TICK_S):
                redraw()

        ticker = threading.Thread(target=tick, name="progress-tick", daemon=True)
        ticker.start()
        try:
            with progress.listening(on_run):
                yield
        finally:
            stop.set()
            ticker.join(timeout=2)
            root.removeHandler(handler)
