"""A call retried after a broken stream has its tokens counted (#31 item 8.4), on both
runtimes: the Anthropic emulator breaks the first stream (``midstream_error``) and counts what
it served; the harness's cost log must count the same tokens (on claude-code it logged 23,683
of 30,727: the CLI's total came back empty after its fallback, and the broken attempt was in
no figure at all), so the budgets see them."""

from __future__ import annotations

import pytest

from harness_cli.eval.cases import load_library
from harness_cli.eval.grader import check
from harness_cli.eval.investigation_driver import run_case
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.services.claude_cli import find_claude

BOTH = [
    pytest.param("claude-code", marks=[
        pytest.mark.claude_cli, pytest.mark.slow,
        pytest.mark.skipif(find_claude() is None, reason="claude CLI not found")]),
    "anthropic",
]  # fmt: skip


@pytest.mark.parametrize("runtime", BOTH)
def test_a_call_retried_after_a_broken_stream_has_its_tokens_counted(runtime: str) -> None:
    case = {c.id: c for c in load_library()}["honest-complete"].model_copy(deep=True)
    case.setup.faults = [{"kind": "midstream_error", "match": "/v1/messages", "times": 1}]
    emu = AnthropicEmulator()
    emu.start()
    try:
        seen = run_case(case, runtime, anthropic=emu)
        served = sum(v for k, v in emu.usage_totals().items() if k.endswith("tokens"))
        broken = sum(1 for c in emu.calls if c.interrupted)
    finally:
        emu.stop()
    assert check(case, seen) == []
    if runtime == "claude-code":
        assert broken == 1  # the CLI streams: the fault broke a stream it then retried
    assert seen.tokens == served, f"logged {seen.tokens:,} of {served:,} served"
