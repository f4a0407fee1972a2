"""The adoption rule of :mod:`harness_cli.workflows.unbegun` case by case (the end-to-end
proof is tests/obligations/test_crash_mr_rounds.py: a real fix_ci run SIGKILLed before it
recorded its start, adopted by the next mr-monitor cycle): which payloads are adopted, that
one is adopted once, and which are left alone."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from harness_cli.config import load_config
from harness_cli.dispatch import dispatcher as dispatch
from harness_cli.dispatch import journal
from harness_cli.dispatch.payload import Payload, Trigger, load_payload
from harness_cli.state.locks import workflow_lock
from harness_cli.workflows import unbegun


def _payload(case_id: str = "AAA-1", *, age: float = 700.0) -> Path:
    sent = dispatch.dispatch(
        Payload(
            workflow="dev-agent",
            case_id=case_id,
            case_dir="/nowhere",
            trigger=Trigger(kind="ci_failed", ts="1796000000.000100"),
            args={"mode": "fix_ci"},
        ),
        backend="record",
    )
    then = time.time() - age
    os.utime(sent.payload_file, (then, then))
    return sent.payload_file


def _resumes(folder: Path) -> list[dict[str, object]]:
    found = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    return [d for d in found if d["trigger"]["kind"] == "resume"]  # type: ignore[index]


def test_a_payload_whose_run_never_began_is_dispatched_again_once(harness_ready: Path) -> None:
    cfg = load_config()
    path = _payload()
    lines = unbegun.unbegun_payloads(cfg, None, backend="record")
    assert lines == ["resumed dev-agent AAA-1 (its run never began)"]
    [again] = _resumes(path.parent)
    original = load_payload(path)
    assert again["args"] == {"mode": "fix_ci", "resume_run": original.key}
    assert unbegun.unbegun_payloads(cfg, None, backend="record") == []  # never twice
    assert len(_resumes(path.parent)) == 1


def test_payloads_that_began_are_young_are_held_or_are_running_are_left_alone(
    harness_ready: Path,
) -> None:
    cfg = load_config()
    young = _payload("AAA-2", age=5)
    held = _payload("AAA-3")
    unbegun.settle(str(held), "held back by a pause")
    began = _payload("AAA-4")
    record = journal.record_path("dev-agent", "AAA-4", load_payload(began).key)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text("{}")
    _payload("AAA-5")
    with workflow_lock("dev-agent", "AAA-5"):  # that workflow runs on the case right now
        assert unbegun.unbegun_payloads(cfg, None, backend="record") == []
    assert _resumes(young.parent) == []
