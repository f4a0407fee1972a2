"""The other machine's delta as the text a hook injects: "the other machine added N messages
since the last sync", then the messages, newest kept when the hook output limit bites.

Transcript records are parsed tolerantly: new record types appear between CLI versions, and a
record without a ``message`` (attachments, queue operations, summaries …) is not a message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_cli.memory.resume.model import SessionSyncSettings


def render_record(line: bytes, limit: int) -> str | None:
    """``[role] text`` for a message record; None for anything else."""
    try:
        obj: Any = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    message = obj.get("message")
    if not isinstance(message, dict):
        return None
    role = message.get("role") or obj.get("type") or "message"
    text = " ".join(_content_text(message.get("content")).split())
    if not text:
        return None
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"[{role}] {text}"


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "tool_use":
            args = json.dumps(block.get("input"), ensure_ascii=False, default=str)
            parts.append(f"(tool call {block.get('name', '?')} {args})")
        elif kind == "tool_result":
            parts.append(f"(tool result) {_content_text(block.get('content'))}")
    return " ".join(parts)


def render_delta(
    lines: list[bytes],
    *,
    writer: str,
    cut: int,
    settings: SessionSyncSettings,
    delta_file: Path,
) -> tuple[str, int]:
    """The injected text and its message count; ``("", 0)`` when the delta holds no message."""
    messages = [m for m in (render_record(ln, settings.message_chars) for ln in lines) if m]
    if not messages:
        return "", 0
    count = len(messages)
    noun = "message" if count == 1 else "messages"
    head = [f"Session sync: the other machine ({writer}) added {count} {noun} since the last sync."]
    if cut:
        head.append(
            f"({cut} older lines of its transcript were cut for the store before this machine "
            "saw them.)"
        )
    budget = settings.max_context_chars - sum(len(h) + 1 for h in head) - 200
    kept: list[str] = []
    for text in reversed(messages):
        if budget - len(text) - 1 < 0:
            break
        kept.append(text)
        budget -= len(text) + 1
    omitted = count - len(kept)
    if omitted:
        head.append(
            f"({omitted} earlier {'message was' if omitted == 1 else 'messages were'} left out "
            f"to fit; the whole delta is in {delta_file}.)"
        )
    return "\n".join([*head, *reversed(kept)]), count
