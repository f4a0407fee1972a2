"""The live mode's LLM judge (``eval.judge``), on the Anthropic emulator standing in for the
real API: the runtime's own model is asked, its verdict parsed, its call metered; a verdict
that does not parse is no verdict; without a key it refuses before any call."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli import resources
from harness_cli.errors import InputError
from harness_cli.eval.judge import judge
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.runner import SANDBOX_TOKENS
from harness_cli.services.claude_cli import find_claude

EXPECTED = "the rate limiter's sliding window is keyed by pod, not by tenant"
SCRIPT: dict[str, Any] = {
    "roles": {
        "judge": [
            {"when": {"user_contains": "keyed per pod"},
             "reply": {"text": 'Verdict: {"match": true, "reason": "same key, other words"}'}},
            {"when": {"user_contains": "gibberish"}, "reply": {"text": "I cannot say."}},
            {"reply": {"text": '{"match": false, "reason": "a symptom, not the cause"}'}},
        ]
    }
}  # fmt: skip
BOTH = [
    pytest.param("anthropic"),
    pytest.param("claude-code", marks=[
        pytest.mark.claude_cli, pytest.mark.slow,
        pytest.mark.skipif(find_claude() is None, reason="claude CLI not found")]),
]  # fmt: skip


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AnthropicEmulator]:
    shutil.copytree(resources.example_config(), tmp_path / "agent-config")
    shutil.copytree(resources.example_sops(), tmp_path / "sops")
    emu = AnthropicEmulator(SCRIPT)
    emu.start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", emu.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SANDBOX_TOKENS["ANTHROPIC_API_KEY"])
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the claude CLI's own sessions
    yield emu
    emu.stop()


@pytest.mark.parametrize("runtime", BOTH)
def test_the_judge_asks_the_runtime_s_model_and_reads_its_verdict(
    api: AnthropicEmulator, runtime: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HARNESS_RUNTIME", runtime)
    same = judge(EXPECTED, "Throttling comes from the window being keyed per pod.")
    assert same.match is True and same.reason == "same key, other words"
    other = judge(EXPECTED, "Requests are throttled with 429s under load.")
    assert other.match is False
    bodies = [r.json_body() for r in api.recorded("/v1/messages")]
    asked = [json.dumps(b) for b in bodies if "harness-role: judge" in json.dumps(b)]
    assert asked and all(EXPECTED in text for text in asked)  # the ground truth went along
    # Metered as every call is: the cost log of this home has the judge's calls.
    logged = "".join(p.read_text() for p in (tmp_path / "harness-home").rglob("*.jsonl"))
    assert logged.count('"role":"judge"') >= 2 and same.usd > 0


def test_an_answer_without_a_verdict_is_no_verdict(api: AnthropicEmulator) -> None:
    said = judge(EXPECTED, "gibberish")
    assert said.match is None and "holds no verdict" in said.reason


def test_without_a_key_the_judge_refuses_before_any_call(
    api: AnthropicEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(InputError, match="ANTHROPIC_API_KEY"):
        judge(EXPECTED, "anything")
    assert not api.recorded("/v1/messages")


def test_a_grader_outside_any_install_judges_with_the_packaged_config(
    api: AnthropicEmulator, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """In an eval worker HARNESS_CONFIG may name nothing: the packaged example's model and
    prices apply, on the runtime the grader names."""
    monkeypatch.setenv("HARNESS_CONFIG", str(tmp_path / "nowhere"))
    said = judge(EXPECTED, "The window is keyed per pod.", runtime="anthropic")
    assert said.match is True and said.usd > 0
