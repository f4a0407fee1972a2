"""Bounded inputs: third-party text enters a model prompt up to ``harness.yaml``'s ``inputs:``
sizes, with a note of what was cut; the whole text stays on disk. L4: a 1 MB Slack message
through poll-slack and a whole investigation, the bytes of every model request counted in the
Anthropic emulator's log. L2: one huge tool result in the harness's own tool loop."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from tests.conftest import REPO

MEGABYTE = 1024 * 1024
REQUEST_CEILING = 120_000
"""Bytes one model request may have here: the prompts, SOPs and tool schemas (~40 KB), the
bounded ticket (16 000 characters) and a few bounded tool results — not the megabyte."""


@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AnthropicEmulator]:
    emu = AnthropicEmulator()
    emu.start()
    shutil.copytree(REPO / "sops", tmp_path / "sops")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", emu.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-bounds")
    monkeypatch.setenv("HARNESS_RUNTIME", "anthropic")
    try:
        yield emu
    finally:
        emu.stop()


def test_a_megabyte_ticket_gives_bounded_model_requests_and_stays_whole_on_disk(
    cli, slack_emu, harness_ready: Path, tmp_path: Path, model: AnthropicEmulator
) -> None:  # type: ignore[no-untyped-def]
    head = "AAA-61 the nightly export fails. Log follows.\n"
    log_lines = "".join(
        f"2026-11-30T02:{i % 60:02d}:00 export row {i} failed\n" for i in range(40_000)
    )
    ticket = (head + log_lines)[:MEGABYTE]
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", ticket)
    code, out, err = cli("poll-slack", "--json")
    assert code == 0 and json.loads(out)["data"]["new_cases"] == ["AAA-61"], out + err
    model.load_script("inv_honest")
    code, out, err = cli("investigate", "AAA-61", "--no-post")
    assert code == 0, out + err

    message = tmp_path / "workspace" / "case-workspaces" / "AAA-61" / "message.json"
    assert json.loads(message.read_text())["text"] == ticket  # the whole ticket is kept
    requests = model.recorded("/v1/messages")
    assert len(requests) >= 5  # pre-commitment, iterations, both reviews
    sizes = [len(r.body) for r in requests]
    assert max(sizes) < REQUEST_CEILING, sizes
    assert sum(sizes) < MEGABYTE, sizes  # on main: every request carried the megabyte
    prompts = b"".join(r.body for r in requests).decode()
    assert "characters of the ticket left out here; the whole text is in" in prompts
    assert "export row 0 failed" in prompts  # the head is there, and …
    last_line = ticket.rsplit("\n", 2)[-2]
    assert last_line in prompts  # … the tail


def test_one_huge_tool_result_is_bounded_in_the_next_request(
    tmp_path: Path, model: AnthropicEmulator
) -> None:
    from harness_cli.agents.anthropic_loop import AnthropicRuntime
    from harness_cli.services.runtime import RunRequest

    work = tmp_path / "work"
    work.mkdir()
    (work / "big.log").write_text("".join(f"line {i:06d} " + "x" * 90 + "\n" for i in range(1990)))
    model.load_script(
        {
            "schema_version": 1,
            "roles": {
                "reader": [
                    {
                        "when": {"turn": 0},
                        "reply": {
                            "text": "reading",
                            "tool_calls": [
                                {"name": "Read", "input": {"file_path": "{cwd}/big.log"}}
                            ],
                        },
                    },
                    {"reply": {"text": "done"}},
                ]
            },
        }
    )
    runtime = AnthropicRuntime(sessions_dir=tmp_path / "sessions", tool_result_chars=20_000)
    result = runtime.run(
        RunRequest(role="reader", prompt="read big.log", workdir=work, allowed_root=work)
    )
    assert result.ok, result.error
    second = model.recorded("/v1/messages")[-1]
    assert len(second.body) < 40_000  # the file's ~200 KB did not go back to the model
    assert b"characters of the Read result left out here" in second.body
