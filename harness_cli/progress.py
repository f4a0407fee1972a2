"""Live progress, published by core code and rendered (or not) by the command that runs it.

Core code never prints (STYLE rule 14): a long run publishes what it is doing — the runtime's
events, each with the role that made it — and a command module on a terminal subscribes and
draws a status line. With no subscriber, publishing costs a list lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Listener = Callable[[str, dict[str, Any]], None]
_listeners: list[Listener] = []


def publish(kind: str, **data: Any) -> None:
    for listener in list(_listeners):
        listener(kind, data)


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)
