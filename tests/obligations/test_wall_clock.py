"""#20 "a run that hits its wall-clock limit ends with its named exit": a model whose streams
stall mid-SSE (the Anthropic emulator's ``midstream_stall``: the stream starts, then nothing,
for longer than the run may last) no longer holds the investigation for the call's own 900 s
limit. The run's wall clock (``investigation.wall_clock_minutes``) bounds every call; the call
still running at it is cut and the loop ends with the reference's ``timeout`` exit — exit 0 as
every honest exit, the case ``escalated`` (the operator decides, ``harness investigate`` starts
it again), one post in the case thread saying why and what to do."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from harness_cli.sandbox.httpbase import Fault
from tests.investigation.conftest import (  # noqa: F401
    CASE,
    CLI_MARKS,
    TICKET,
    Investigation,
    inv,
    model_server,
)

WALL_CLOCK_S = 12


@pytest.mark.parametrize("runtime", [pytest.param("claude-code", marks=CLI_MARKS), "anthropic"])
def test_a_stalled_model_stream_ends_the_investigation_at_its_wall_clock(
    inv: Investigation,  # noqa: F811
    slack_emu: Any,
) -> None:
    inv.script("inv_honest")
    inv.thresholds(wall_clock_minutes=WALL_CLOCK_S / 60)  # type: ignore[arg-type]
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"{TICKET} ({CASE})")
    code, _, err = inv.cli("poll-slack")
    assert code == 0, err
    inv.emu.add_fault(Fault(kind="midstream_stall", match="/v1/messages", seconds=900, times=-1))
    try:
        began = time.monotonic()
        code, out, err = inv.cli("investigate", CASE, "--json")
        took = time.monotonic() - began
    finally:
        with inv.emu.lock:
            inv.emu.faults.clear()
    assert code == 0, f"investigate exited {code}: {err}{out}"
    assert took < WALL_CLOCK_S + 40, f"the run took {took:.0f} s for a {WALL_CLOCK_S} s clock"
    data = json.loads(out)["data"]
    assert str(data["exit_line"]).startswith("exit=timeout"), data
    assert "cut at the wall clock" in data["exit_line"]
    case = inv.case_json()
    assert case["status"] == "escalated" and case["exit"] == data["exit_line"]
    posts = [m for m in slack_emu.messages("D0SELF") if m["text"].startswith("`exit=")]
    assert len(posts) == 1, posts
    assert "wall clock" in posts[0]["text"] and f"harness investigate {CASE}" in posts[0]["text"]
