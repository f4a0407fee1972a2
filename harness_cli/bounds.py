"""Bounded inputs: third-party text enters a model prompt up to a configured size, with a note of
what was cut and where the whole text is (issue #17, point 5).

A 1 MB Slack message went whole into every model request of its investigation (six requests,
5 MB in all): cost, latency, the context window — and a way for anyone who can post a ticket to
crowd the instructions out of the prompt. The limits live in ``harness.yaml`` (``inputs:``);
the full text always stays where it came from (``message.json``, the Slack thread, the job log
in the case's ``ci/`` folder).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Keep = Literal["head", "tail", "both"]


class InputBounds(BaseModel):
    """``harness.yaml`` ``inputs:`` — characters of each kind of third-party text a prompt
    takes."""

    model_config = ConfigDict(extra="forbid")

    ticket_chars: int = Field(16_000, ge=500)
    """The ticket (``message.json``'s text) in the investigator's, reviewers' and
    pre-commitment prompts."""
    reply_chars: int = Field(8_000, ge=200)
    """Each thread reply a followup reads."""
    job_trace_chars: int = Field(20_000, ge=500)
    """The failed CI job's log in a fix_ci prompt (its tail: that is where the error is)."""
    tool_result_chars: int = Field(50_000, ge=1_000)
    """One tool result handed back to the model by the harness's own tool loop (the claude
    CLI bounds its own)."""
    mcp_result_bytes: int = Field(1_000_000, ge=10_000)
    """One MCP server's answer as the harness's own MCP client reads it: past this many bytes
    the rest is dropped while it arrives (never held whole), and the model gets the head with
    a note saying it was cut."""


CUT_NOTE = "[… {cut} of {total} characters of {what} left out here; the whole text is in {where}]"


def bound(text: str, limit: int, *, what: str, where: str, keep: Keep = "both") -> str:
    """``text`` if it fits in ``limit`` characters, else the part kept (``head``, ``tail`` or
    ``both`` ends, 3:1) around a note saying how much was cut and where the whole is. The
    result never exceeds ``limit`` by more than the note."""
    if len(text) <= limit:
        return text
    note = CUT_NOTE.format(cut=len(text) - limit, total=len(text), what=what, where=where)
    if keep == "head":
        return f"{text[:limit]}\n{note}"
    if keep == "tail":
        return f"{note}\n{text[-limit:]}"
    head = limit * 3 // 4
    return f"{text[:head]}\n{note}\n{text[len(text) - (limit - head) :]}"
