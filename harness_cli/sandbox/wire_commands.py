"""The commands a scripted model asked for, and what became of each, read from the wire: the
Bash ``tool_use`` blocks in the conversations the Anthropic emulator received and the
``tool_result`` that answered each. A command the runtime refused (an unknown parameter, a
path outside the box) or that never got a result did not run — whatever the model's report
says next; an eval or the demo must say so rather than count the step as passed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

Fate = Literal["ran", "failed", "refused", "never ran"]

REFUSAL = re.compile(
    r"unknown parameter|missing required parameter|must be a |^refused|permission denied|"
    r"<tool_use_error>|InputValidationError|"
    r"operation not permitted|not allowed|sandbox|denied|blocked|no such file or directory: "
    r"'?/|cannot access the working directory|was not run",
    re.IGNORECASE,
)
"""How a runtime says a command was not run at all (the anthropic runtime's ToolFailure texts,
the claude CLI's permission and sandbox refusals) — as opposed to a command that ran and
exited non-zero."""


@dataclass(frozen=True)
class Command:
    command: str
    fate: Fate
    said: str
    """The first line of what the runtime answered (empty when nothing came back)."""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def commands(bodies: list[Any]) -> list[Command]:
    """Every Bash call in ``bodies`` (Messages request bodies, in order), once, with its fate.
    A call whose result no later request carries never ran."""
    asked: dict[str, str] = {}
    answered: dict[str, tuple[bool, str]] = {}
    for body in bodies:
        if not isinstance(body, dict):
            continue
        for message in body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            if not isinstance(content, list):
                continue
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use" and block.get("name") == "Bash":
                    asked.setdefault(str(block.get("id")), str((block.get("input") or {})
                                                                .get("command", "")))  # fmt: skip
                elif block.get("type") == "tool_result":
                    answered[str(block.get("tool_use_id"))] = (
                        bool(block.get("is_error")),
                        _text(block.get("content")),
                    )
    found = []
    for tool_id, command in asked.items():
        if tool_id not in answered:
            found.append(Command(command, "never ran", ""))
            continue
        error, said = answered[tool_id]
        first = said.strip().splitlines()[0][:200] if said.strip() else ""
        fate: Fate = "ran"
        if error:
            fate = "refused" if REFUSAL.search(said[:400]) else "failed"
        found.append(Command(command, fate, first))
    return found


def from_emulator(emulator: Any) -> list[Command]:
    return commands([r.json_body() for r in emulator.recorded("/v1/messages")])


def not_run(found: list[Command]) -> list[Command]:
    return [c for c in found if c.fate in ("refused", "never ran")]
