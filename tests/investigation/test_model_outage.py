"""A model outage is waited out, not turned into failed cases (#34 item 6): the Anthropic
emulator answers 529 (overloaded) — for a few requests, then for as long as the test wants.
A blip costs a retry and nothing else; a long outage leaves each case waiting (not failed),
tells the operator once in plain words, and the next poll-slack cycle resumes every case once
the API answers again."""

from __future__ import annotations

import json
from typing import Any

import yaml

from harness_cli.sandbox.httpbase import Fault
from tests.investigation.conftest import CASE, TICKET, Investigation

OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def _outage_settings(inv: Investigation, **values: float) -> None:
    path = inv.config / "harness.yaml"
    data = yaml.safe_load(path.read_text())
    data["model_outage"] = values
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _overloaded(inv: Investigation, times: int) -> None:
    inv.emu.add_fault(
        Fault("status", match="/v1/messages", status=529, body=OVERLOADED, times=times)
    )


def _dms(slack_emu: Any) -> list[str]:
    return [m["text"] for m in slack_emu.messages("D0SELF")]


def test_a_blip_of_529s_is_retried_within_the_run(inv: Investigation, slack_emu: Any) -> None:
    _outage_settings(inv, retry_seconds=20, first_backoff_seconds=0.5)
    inv.script("inv_honest")
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"{TICKET} ({CASE})")
    assert inv.cli("poll-slack")[0] == 0
    _overloaded(inv, times=6)  # the SDK's own 2 retries per attempt: two attempts fail

    data = inv.investigate(post=True)

    assert data["status"] == "awaiting_approval", data
    assert not any("model API" in t for t in _dms(slack_emu))


def test_a_long_outage_leaves_cases_waiting_tells_once_and_resumes(
    inv: Investigation, slack_emu: Any
) -> None:
    _outage_settings(inv, retry_seconds=1, first_backoff_seconds=0.2, resume_every_seconds=0)
    inv.script("inv_honest")
    second = "AAA-102"
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"{TICKET} ({CASE})")
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"{TICKET} ({second})")
    assert inv.cli("poll-slack")[0] == 0
    before = len(_dms(slack_emu))
    _overloaded(inv, times=-1)

    for case_id in (CASE, second):
        code, out, err = inv.cli("investigate", case_id, "--json")
        assert code == 1, err
        data = json.loads(out)["data"]
        assert data["waiting"] is True and "overloaded" in data["exit_line"], data
        case = inv.case_json(case_id)
        assert case["status"] != "failed", case["status"]

    told = _dms(slack_emu)[before:]
    outage_dms = [t for t in told if "model API" in t and ":hourglass:" in t]
    assert len(outage_dms) == 1, told
    assert "overloaded" in outage_dms[0] and CASE in outage_dms[0]
    for text in told:  # no raw SDK error anywhere
        assert "overloaded_error" not in text and "{'type'" not in text, text
        assert ":x:" not in text and "Failed" not in text, text

    code, out, _ = inv.cli("status")
    assert "waiting for the model API (overloaded" in out and second in out, out

    # the API is back: the next cycle dispatches both cases again, and each run gets through
    with inv.emu.lock:
        inv.emu.faults.clear()
    code, out, err = inv.cli("poll-slack", "--json")
    assert code == 0, err
    payloads = sorted((inv.root / "harness-home" / "payloads").glob("*-investigate-*.json"))
    resumed = [p for p in payloads if json.loads(p.read_text())["trigger"]["kind"]
               == "model_outage_retry"]  # fmt: skip
    assert sorted(json.loads(p.read_text())["case_id"] for p in resumed) == sorted([CASE, second])
    for payload in resumed:
        code, _, err = inv.cli("investigate", "--payload", str(payload))
        assert code == 0, err
    for case_id in (CASE, second):
        assert inv.case_json(case_id)["status"] == "awaiting_approval"
    assert not (inv.root / "harness-home" / "model-outage.json").exists()
    # and the cycle after that has nothing left to resume
    assert inv.cli("poll-slack")[0] == 0
    again = sorted((inv.root / "harness-home" / "payloads").glob("*-investigate-*.json"))
    assert len(again) == len(payloads)


def test_a_case_closed_while_it_waits_is_not_tried_again(
    inv: Investigation, slack_emu: Any
) -> None:
    _outage_settings(inv, retry_seconds=0, resume_every_seconds=0)
    inv.script("inv_honest")
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"{TICKET} ({CASE})")
    assert inv.cli("poll-slack")[0] == 0
    _overloaded(inv, times=-1)
    assert inv.cli("investigate", CASE)[0] == 1
    assert (inv.root / "harness-home" / "model-outage.json").exists()
    assert inv.cli("case", "close", CASE, "--reason", "duplicate")[0] == 0
    with inv.emu.lock:
        inv.emu.faults.clear()

    assert inv.cli("poll-slack")[0] == 0

    payloads = (inv.root / "harness-home" / "payloads").glob("*-investigate-*.json")
    kinds = [json.loads(p.read_text())["trigger"]["kind"] for p in payloads]
    assert "model_outage_retry" not in kinds
    assert not (inv.root / "harness-home" / "model-outage.json").exists()
