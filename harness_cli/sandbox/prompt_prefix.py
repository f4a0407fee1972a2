"""What each model request's prompt prefix is made of, and where it first stops matching the
prompts sent before it — read from the Anthropic emulator's request log (issue #22: measure
before changing anything).

A request is cut into blocks the way the prompt cache reads it (``anthropic_usage``: tools,
then system, then messages); two requests share a prefix exactly as far as their blocks are
byte-identical. For every request this says how many tokens its tools, system and messages
hold, where its breakpoints are, and, against the earlier request it shares most with, how
far they agree, which block differs first and the text around the first differing character.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_cli.sandbox.anthropic_usage import PromptBlock, prompt_blocks
from harness_cli.sandbox.model_script import RequestView

__all__ = ["CallPrefix", "analyze", "reachable_share", "read_log", "render", "role_summary"]

SNIPPET = 70


@dataclass
class CallPrefix:
    index: int
    role: str
    turn: int
    tools: int
    """Tokens of the tool definitions."""
    system: int
    messages: int
    breakpoints: list[tuple[str, int]]
    """(block label, tokens up to and including it) for each ``cache_control`` block."""
    shared: int = 0
    """Tokens of the longest byte-identical block prefix with an earlier request."""
    shared_with: int | None = None
    first_diff: str = ""
    """Label of the first block that differs from ``shared_with`` (empty: none before)."""
    snippet: str = ""
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.tools + self.system + self.messages


def read_log(path: Path) -> list[list[dict[str, Any]]]:
    """The body log as runs: a ``{"reset": true}`` line starts the next one."""
    runs: list[list[dict[str, Any]]] = [[]]
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("reset"):
            runs.append([])
        elif "body" in record:
            runs[-1].append(record)
    return [run for run in runs if run]


def _common(a: list[PromptBlock], b: list[PromptBlock]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n].key == b[n].key:
        n += 1
    return n


def _snippet(old: str, new: str) -> str:
    i = 0
    while i < min(len(old), len(new)) and old[i] == new[i]:
        i += 1
    return "…" + new[max(0, i - SNIPPET // 2) : i + SNIPPET] + "…"


def analyze(records: Iterable[Mapping[str, Any]]) -> list[CallPrefix]:
    """One ``CallPrefix`` per logged request (``{"body": …, "usage": …}``), in order."""
    seen: list[list[PromptBlock]] = []
    out: list[CallPrefix] = []
    for n, record in enumerate(records):
        body = record["body"]
        blocks = prompt_blocks(body)
        view = RequestView.from_body(body)
        sizes = {"tool": 0, "system": 0, "message": 0}
        running, marks = 0, []
        for block in blocks:
            sizes[block.key.split(":", 1)[0]] += block.tokens
            running += block.tokens
            if block.breakpoint:
                marks.append((block.label, running))
        call = CallPrefix(
            n, view.role, view.turn, sizes["tool"], sizes["system"], sizes["message"], marks,
            usage=dict(record.get("usage") or {}),
        )  # fmt: skip
        best = max(range(len(seen)), key=lambda i: _common(seen[i], blocks), default=None)
        if best is not None:
            same = _common(seen[best], blocks)
            call.shared_with = best
            call.shared = sum(b.tokens for b in blocks[:same])
            if same < len(blocks):
                call.first_diff = blocks[same].label
                old = seen[best][same].key if same < len(seen[best]) else ""
                call.snippet = _snippet(old, blocks[same].key)
        seen.append(blocks)
        out.append(call)
    return out


def reachable_share(calls: list[CallPrefix], minimum: int = 0) -> float:
    """The most of the input from the second request on that any cache layout could read: a
    request can reuse only what an earlier request sent before it, byte for byte from the
    start (``shared``), and only a prefix of at least ``minimum`` tokens (the model's minimum
    cacheable length). What is left is new to the ticket — its own prompts, another role's
    own tools — and no breakpoint placement reads that (#22's bound on the layout)."""
    later = calls[1:]
    total = sum(c.total for c in later)
    reusable = sum(c.shared for c in later if c.shared >= minimum)
    return reusable / total if total else 0.0


def _read_share(usage: Mapping[str, Any]) -> float:
    read = int(usage.get("cache_read_input_tokens") or 0)
    total = read + int(usage.get("cache_creation_input_tokens") or 0)
    total += int(usage.get("input_tokens") or 0)
    return read / total if total else 0.0


def render(calls: list[CallPrefix]) -> list[str]:
    """One line per request, then where its prefix first differed (if it did)."""
    lines = ["   # role                 turn  tools system  msgs | shared with   read | first diff"]
    for c in calls:
        shared = f"{c.shared:6,d} #{c.shared_with}" if c.shared_with is not None else " " * 9
        lines.append(
            f"  {c.index:2d} {c.role:<22} {c.turn:3d} {c.tools:6,d} {c.system:6,d} "
            f"{c.messages:5,d} | {shared:<11} {_read_share(c.usage):5.0%} | {c.first_diff}"
        )
        if c.snippet and not c.first_diff.startswith("msg"):
            lines.append(f"       {' ' * 50}{c.snippet[:110]!r}")
    return lines


def role_summary(calls: list[CallPrefix]) -> list[str]:
    """Per role: requests, mean prompt size and its parts, share read from the cache."""
    lines = ["  role                 calls  mean in  tools system  msgs  read from cache"]
    for role in dict.fromkeys(c.role for c in calls):
        mine = [c for c in calls if c.role == role]
        k = len(mine)
        read = sum(int(c.usage.get("cache_read_input_tokens") or 0) for c in mine)
        total = sum(c.total for c in mine)
        lines.append(
            f"  {role:<20} {k:5d} {total // k:8,d} {sum(c.tools for c in mine) // k:6,d} "
            f"{sum(c.system for c in mine) // k:6,d} {sum(c.messages for c in mine) // k:5,d}"
            f"  {read / total if total else 0:6.1%}"
        )
    return lines
