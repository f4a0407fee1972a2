"""A message whose handling keeps failing is retried, then parked and the operator told — never
dropped, never retried every minute for ever (the lifecycle's retry budget)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import payloads
from tests.intake.conftest import case_threads, poll


def test_a_failing_message_is_retried_then_parked_then_retried_on_request(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    slack_emu.fail("chat.postMessage", "internal_error", times=5, status=500)
    ticket = slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-111 the app is down")
    key = f"C0SUPPORT/{ticket['ts']}"
    for attempt in range(1, 6):
        data = poll(cli, ok=False)
        assert data["errors"] and key in data["errors"][0], attempt
    assert data["parked"] == [key]
    told = [m["text"] for m in slack_emu.messages("D0SELF") if key in m["text"]]
    assert len(told) == 1 and "--retry-parked" in told[0]
    assert poll(cli)["errors"] == []  # parked: not retried by itself
    code, out, err = cli("poll-slack", "--retry-parked", "--json")
    assert code == 0, out + err
    assert len(case_threads(slack_emu, "AAA-111")) == 1
    assert [p["case_id"] for p in payloads(tmp_path, "investigate")] == ["AAA-111"]
