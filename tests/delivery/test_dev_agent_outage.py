"""A model outage during a dev-agent run (#34 item 6): the task is tried again with backoff,
then the case waits — approved or in progress, never failed — the operator hears of the outage
once, and the next poll-slack cycle runs the task again once the API answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness_cli.sandbox.httpbase import Fault
from tests.delivery.desk import SELF_DM, Desk

pytestmark = pytest.mark.slow

OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def test_a_task_waits_out_a_model_outage_and_resumes(desk: Desk, tmp_path: Path) -> None:
    config = tmp_path / "agent-config" / "harness.yaml"
    data = yaml.safe_load(config.read_text())
    data["model_outage"] = {
        "retry_seconds": 1, "first_backoff_seconds": 0.2, "resume_every_seconds": 0,
    }  # fmt: skip
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    desk.approved_case("AAA-301")
    before = len(desk.box.slack.messages(SELF_DM))
    desk.box.anthropic.add_fault(
        Fault("status", match="/v1/messages", status=529, body=OVERLOADED, times=-1)
    )

    out = desk.task("AAA-301", expect=1)

    assert out["data"]["waiting"] is True and "overloaded" in out["data"]["message"]
    assert desk.status("AAA-301") != "failed"
    told = [m["text"] for m in desk.box.slack.messages(SELF_DM)[before:]]
    assert sum(t.startswith(":hourglass: The model API") for t in told) == 1, told
    assert not any("overloaded_error" in t or "{'type'" in t for t in told), told

    # still down: the next cycle's try waits again, in the same status message (#34 item 13)
    desk.harness("poll-slack")
    [(path, _)] = _retries(desk)
    desk.harness("dev-agent", "--payload", str(path), expect=1)
    messages = desk.box.slack.messages(SELF_DM)[before:]
    waiting = [m for m in messages if m.get("thread_ts") and "model API" in m["text"]]
    assert len(waiting) == 1, [m["text"] for m in messages]
    assert len(messages) == len(told), [m["text"] for m in messages]  # nothing new at all

    with desk.box.anthropic.lock:
        desk.box.anthropic.faults.clear()
    desk.harness("poll-slack")
    [(path, payload)] = [r for r in _retries(desk) if r[0] != path]
    assert payload["args"]["mode"] == "task"
    done = desk.harness("dev-agent", "--payload", str(path))
    assert done["data"]["mr"]["web_url"], done
    assert desk.status("AAA-301") == "mr_open"
    assert not (desk.home / "model-outage.json").exists()
    assert json.loads((desk.home / "payloads" / path.name).read_text())["case_id"] == "AAA-301"
    # the end of the outage is said once, in the outage DM itself; the waiting message became
    # the run's outcome
    after = {m["ts"]: m["text"] for m in desk.box.slack.messages(SELF_DM)}
    [outage_dm] = [m for m in messages if m["text"].startswith(":hourglass: The model API")]
    assert "is back" in after[outage_dm["ts"]], after[outage_dm["ts"]]
    assert "model API" not in after[waiting[0]["ts"]], after[waiting[0]["ts"]]
    assert not any("model API" in t for ts, t in after.items() if ts not in
                   {m["ts"] for m in messages})  # fmt: skip


def _retries(desk: Desk) -> list[tuple[Path, dict[str, Any]]]:
    return [(p, d) for p, d in desk.payloads() if d["trigger"]["kind"] == "model_outage_retry"]
