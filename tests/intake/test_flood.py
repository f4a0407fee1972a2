"""Flood control (#28 R13), through `harness poll-slack` on the Slack emulator: one user's 60
messages used to open 60 cases, 60 paid investigations and 60 self-DM posts in seconds. With
the default intake rate (5 per user, 20 per channel, in 10 minutes) the first tickets open
cases as usual and the rest of the burst is folded into ONE case with ONE DM — nothing lost."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from harness_cli.faults import ENV
from tests.conftest import payloads
from tests.intake.conftest import poll, spawn


def _case_threads(emu: Any) -> list[str]:
    """The harness's top-level posts in the self-DM (one per case thread)."""
    return [m["text"] for m in emu.messages("D0SELF") if not m.get("thread_ts")]


def _folded(tmp_path: Path, case_id: str) -> list[dict[str, Any]]:
    path = tmp_path / "workspace" / "case-workspaces" / case_id / "folded.json"
    held: list[dict[str, Any]] = json.loads(path.read_text())
    return held


def test_one_users_sixty_messages_open_five_cases_and_fold_the_rest_into_one(
    cli: Any, slack_emu: Any, harness_ready: Path, tmp_path: Path
) -> None:
    sent = [
        slack_emu.post_as("C0SUPPORT", "U0FLOODER", f"checkout broken, attempt {n}")
        for n in range(60)
    ]

    data = poll(cli)

    # the first five are tickets like any other: a case, an investigation, a case thread each
    investigated = payloads(tmp_path, "investigate")
    assert [p["thread_ts"] for p in investigated] == [m["ts"] for m in sent[:5]]
    flood_case = f"flood-U0FLOODER-{sent[5]['ts'].replace('.', '-')}"
    assert flood_case not in [p["case_id"] for p in investigated]  # never paid for by itself
    # the other 55: one flood case, one DM, every message attached to it
    threads = _case_threads(slack_emu)
    assert len(threads) == 6, threads
    assert sum("Flood control" in t for t in threads) == 1
    assert f"harness case show {flood_case}" in threads[-1]
    assert [m["ts"] for m in _folded(tmp_path, flood_case)] == [m["ts"] for m in sent[5:]]
    assert len(data["folded"]) == 55
    assert len(data["new_cases"]) == 6 and flood_case in data["new_cases"]
    # the operator sees them from the CLI too
    code, out, _ = cli("case", "show", flood_case, "--json")
    assert code == 0 and "folded.json" in out

    # the burst goes on: more messages join the same case, silently; other people are served
    more = slack_emu.post_as("C0SUPPORT", "U0FLOODER", "still broken!!")
    other = slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "BBB-9 refunds fail")
    poll(cli)
    assert len(_case_threads(slack_emu)) == 7  # the other customer's case thread only
    assert _folded(tmp_path, flood_case)[-1]["ts"] == more["ts"]
    assert [p["thread_ts"] for p in payloads(tmp_path, "investigate")][-1] == other["ts"]
    # and nothing is decided twice
    for _ in range(2):
        assert poll(cli)["folded"] == []
    assert len(payloads(tmp_path, "investigate")) == 6
    assert len(_folded(tmp_path, flood_case)) == 56


def test_a_channel_flooded_by_many_users_folds_past_its_own_rate(
    cli: Any, slack_emu: Any, harness_ready: Path, tmp_path: Path
) -> None:
    config = harness_ready / "harness.yaml"
    config.write_text(config.read_text() + "intake_rate: {per_user: 5, per_channel: 3}\n")
    sent = [slack_emu.post_as("C0SUPPORT", f"U0USER{n}", "the site is down") for n in range(8)]

    data = poll(cli)

    assert [p["thread_ts"] for p in payloads(tmp_path, "investigate")] == [
        m["ts"] for m in sent[:3]
    ]
    flood_case = f"flood-C0SUPPORT-{sent[3]['ts'].replace('.', '-')}"
    assert [m["user"] for m in _folded(tmp_path, flood_case)] == [f"U0USER{n}" for n in range(3, 8)]
    assert len(data["folded"]) == 5 and len(_case_threads(slack_emu)) == 4


@pytest.mark.parametrize("step", ["intake.rate_decided:7", "intake.folded:1", "intake.folded:3"])
def test_a_flood_killed_at_any_step_is_finished_once_by_the_next_cycle(
    cli: Any, slack_emu: Any, harness_ready: Path, tmp_path: Path, step: str
) -> None:
    sent = [slack_emu.post_as("C0SUPPORT", "U0FLOODER", f"broken {n}") for n in range(12)]
    proc = spawn("poll-slack", env={ENV: step})
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, f"{step} was never reached: {err.decode()}"

    poll(cli)

    assert [p["thread_ts"] for p in payloads(tmp_path, "investigate")] == [
        m["ts"] for m in sent[:5]
    ]
    flood_case = f"flood-U0FLOODER-{sent[5]['ts'].replace('.', '-')}"
    assert [m["ts"] for m in _folded(tmp_path, flood_case)] == [m["ts"] for m in sent[5:]]
    assert sum("Flood control" in t for t in _case_threads(slack_emu)) == 1
    assert len(_case_threads(slack_emu)) == 6
