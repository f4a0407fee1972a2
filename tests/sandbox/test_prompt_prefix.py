"""The Anthropic emulator's request-body log (bounded) and the prefix report read from it: what
each request was made of and where it first stopped matching the requests before it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic

from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.prompt_prefix import (
    analyze,
    reachable_share,
    read_log,
    render,
    role_summary,
)

MODEL = "claude-sonnet-4-6"
TOOL: Any = {
    "name": "Read",
    "description": "Read a file. " * 400,
    "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
}
EPHEMERAL: Any = {"type": "ephemeral"}


def _ask(client: anthropic.Anthropic, system: list[Any], text: str) -> None:
    client.messages.create(
        model=MODEL,
        max_tokens=64,
        tools=[TOOL],
        system=system,
        messages=[{"role": "user", "content": [{"type": "text", "text": text}]}],
    )


def test_the_log_holds_each_body_and_the_report_says_where_the_prefix_first_differs(
    tmp_path: Path,
) -> None:
    log = tmp_path / "requests.jsonl"
    emu = AnthropicEmulator({"roles": {"default": [{"reply": {"text": "ok"}}]}}, body_log=log)
    emu.start()
    try:
        client = anthropic.Anthropic(base_url=emu.url, api_key="sk-ant-test", max_retries=0)
        stable = {"type": "text", "text": "[harness-role: probe] the stable part"}
        _ask(client, [{**stable, "cache_control": EPHEMERAL}], "first question")
        _ask(client, [{**stable, "cache_control": EPHEMERAL}], "second question")
        moved = {"type": "text", "text": "[harness-role: probe] the stable part, moved: /tmp/x1"}
        _ask(client, [{**moved, "cache_control": EPHEMERAL}], "third question")
        emu.reset()
        _ask(client, [{**stable, "cache_control": EPHEMERAL}], "after the reset")
    finally:
        emu.stop()

    runs = read_log(log)
    assert [len(r) for r in runs] == [3, 1]  # a reset starts another run
    assert runs[0][0]["role"] == "probe" and runs[0][0]["turn"] == 0
    assert runs[0][1]["usage"]["cache_read_input_tokens"] > 0  # the log carries the usage
    calls = analyze(runs[0])
    first, second, third = calls
    assert first.shared_with is None and first.tools > 1000 and first.breakpoints
    # the second differs only after the system breakpoint: in its user message
    assert second.shared_with == 0 and second.first_diff == "msg0.user[0]"
    assert second.shared == first.tools + first.system
    # the third differs inside the system block, and the report quotes where
    assert third.first_diff == "system[0]" and third.shared == first.tools
    assert ", moved: /tmp/x1" in third.snippet
    text = "\n".join(render(calls) + role_summary(calls))
    assert "system[0]" in text and "probe" in text
    # the most a layout could read: what each later request shares with an earlier one
    later = second.total + third.total
    assert reachable_share(calls) == (second.shared + third.shared) / later
    # a shared prefix below the model's minimum cacheable length counts for nothing
    assert reachable_share(calls, minimum=first.tools + 1) == second.shared / later
    # and the emulator's cache, with the breakpoint at the shared prefix, reads exactly that
    read = sum(c.usage["cache_read_input_tokens"] for c in (second, third))
    assert read == second.shared


def test_the_body_log_is_bounded(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    emu = AnthropicEmulator(
        {"roles": {"default": [{"reply": {"text": "ok"}}]}}, body_log=log, body_log_bytes=30_000
    )
    emu.start()
    try:
        client = anthropic.Anthropic(base_url=emu.url, api_key="sk-ant-test", max_retries=0)
        for n in range(8):  # ~7 KB each
            _ask(client, [{"type": "text", "text": "system"}], f"question {n}")
    finally:
        emu.stop()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert log.stat().st_size <= 30_000 + 100
    assert lines[-1] == {"truncated": True, "at_call": len(lines) - 1}
    assert all("body" in line for line in lines[:-1]) and len(emu.calls) == 8
