"""`harness consolidate CASE | --due`: fires on any one of the four signals and only then
calls the model; the harness writes the consolidator's TASK.md after its checks; consolidated
transcripts are marked and no longer fed raw; the per-case lock keeps runs apart."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest

from harness_cli.memory.transcripts import list_all
from harness_cli.sandbox.httpbase import Fault
from tests.conftest import payloads
from tests.memory.conftest import CASE, TASK_MD, Memory

T0 = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
QUIET = "Is the threshold a constant or configuration?"


@contextmanager
def at(monkeypatch: pytest.MonkeyPatch, when: datetime) -> Iterator[None]:
    monkeypatch.setenv("HARNESS_NOW", when.isoformat())
    yield


def _move(case_id: str, *steps: str) -> None:
    from harness_cli.config import load_config
    from harness_cli.workspace import registry

    for step in steps:
        with registry.update_case(case_id, load_config().harness.thresholds, step) as case:
            case.move(step, by="test")


def _talk(mem: Memory, monkeypatch: pytest.MonkeyPatch, text: str, when: datetime) -> None:
    with at(monkeypatch, when):
        mem.reply(text)
        mem.followup()


SIGNALS = {
    "a commit SHA": ("commit_or_decision", "Pushed 3f2a9c1d to the branch.", 0),
    "a decision verb": ("commit_or_decision", "OK, we decided: only the comparison.", 0),
    "5 KB of transcript": ("transcript_bytes", "the order log says: " + "lorem ipsum " * 450, 0),
    "an hour since": ("elapsed", QUIET, 61),
}


@pytest.mark.parametrize("name", sorted(SIGNALS))
def test_each_signal_alone_consolidates(
    mem: Memory, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    signal, text, later = SIGNALS[name]
    mem.open_case()
    _talk(mem, monkeypatch, text, T0)
    with at(monkeypatch, T0 + timedelta(minutes=later)):
        data = mem.consolidate(CASE)["data"]
    assert data["outcome"] == "written" and data["signals"] == [signal], data
    assert len(mem.prompts("consolidator")) == 1


def test_a_review_thread_that_just_closed_consolidates(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.open_case()
    _talk(mem, monkeypatch, QUIET, T0)
    with at(monkeypatch, T0 + timedelta(minutes=5)):
        assert mem.consolidate(CASE)["data"]["outcome"] == "skipped"
        _move(CASE, "approved", "in_progress", "mr_open", "merged")
        data = mem.consolidate(CASE)["data"]
    assert data["signals"] == ["review_thread_closed"] and data["outcome"] == "written"


def test_a_case_that_closed_is_consolidated_by_the_due_walk(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#14 point 12: the "review thread just closed" signal could never fire in --due, which
    skipped closed cases; TASK.md stayed stale at close."""
    mem.open_case()
    _talk(mem, monkeypatch, QUIET, T0)
    with at(monkeypatch, T0 + timedelta(minutes=5)):
        _move(CASE, "approved", "in_progress", "mr_open", "merged", "closed")
        due = mem.consolidate("--due")["data"]
        again = mem.consolidate("--due")["data"]
    [done] = due["done"]
    assert done["case_id"] == CASE and done["outcome"] == "written"
    assert done["signals"] == ["review_thread_closed"]
    assert again["done"] == [] and CASE in again["not_due"]  # folded in once


def test_none_fires_no_model_call(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    mem.open_case("AAA-102")
    mem.open_case()  # the replies go to this one's thread
    _talk(mem, monkeypatch, QUIET, T0)
    calls = len(mem.requests())
    with at(monkeypatch, T0 + timedelta(minutes=30)):
        one = mem.consolidate(CASE)
        due = mem.consolidate("--due")
    assert one["data"]["outcome"] == "skipped" and "no signal fired" in one["skipped"][0]
    assert due["data"]["done"] == [] and sorted(due["data"]["not_due"]) == [CASE, "AAA-102"]
    assert len(mem.requests()) == calls
    assert payloads(mem.root, "consolidate") == []  # the followup did not dispatch one either


def test_consolidation_writes_task_md_marks_transcripts_and_stops_feeding_them(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = mem.open_case()
    _talk(mem, monkeypatch, "Rounding? The order log line is 'total=50.00'.", T0)
    _talk(mem, monkeypatch, "OK, we decided: only the comparison changes.", T0)
    [dispatched] = payloads(mem.root, "consolidate")  # the followup saw the decision
    assert dispatched["args"]["signals"] == ["commit_or_decision"]
    assert dispatched["trigger"]["kind"] == "consolidate_trigger"
    code, _, err = mem.cli("consolidate", "--payload", _payload_file(mem), "--json")
    assert code == 0, err
    task = (folder / "TASK.md").read_text()
    assert "## Decisions from the follow-up conversation" in task
    assert "change the comparison to >= in pricing/discount.py" in task  # kept, not rewritten
    backups = list((folder / "consolidation").glob("*-TASK.before.md"))
    assert [b.read_text() for b in backups] == [TASK_MD]
    marked = list_all(folder)
    assert all(t.consolidated for t in marked) and len(marked) == 2
    assert marked[0].meta.consolidated_into and marked[0].meta.consolidated_into.startswith(
        "TASK.md@"
    )
    memory = json.loads((folder / "memory.json").read_text())
    assert memory["last_consolidated_at"] and memory["consolidations"][-1]["outcome"] == "written"
    # the next turn reads the new TASK.md and no longer the consolidated transcripts
    _talk(mem, monkeypatch, "And the README wording?", T0 + timedelta(minutes=5))
    last = mem.prompts("followup")[-1]
    assert "## Decisions from the follow-up conversation" in last
    assert "total=50.00" not in last and "followup_transcript_001.md" not in last
    assert "(none since the last consolidation)" in last
    log = _git_log(mem)
    assert "consolidated 2 transcript(s) into TASK.md" in log


def test_due_walks_open_cases_and_consolidates_only_those_due(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.open_case()
    _talk(mem, monkeypatch, QUIET, T0)
    mem.open_case("AAA-102", thread=False)  # nothing to consolidate there
    with at(monkeypatch, T0 + timedelta(minutes=90)):
        due = mem.consolidate("--due")["data"]
        again = mem.consolidate("--due")["data"]
    assert [d["case_id"] for d in due["done"]] == [CASE] and due["not_due"] == ["AAA-102"]
    assert again["done"] == [] and len(mem.prompts("consolidator")) == 1


def test_an_answer_without_a_task_md_block_is_refused(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = mem.open_case()
    _talk(mem, monkeypatch, "we decided to ship it", T0)
    mem.inline_script({"consolidator": [{"reply": {"text": "Here is the new TASK.md: # AAA"}}]})
    data = mem.consolidate(CASE, expect=4)["data"]
    assert data["outcome"] == "refused" and "no complete <task_md>" in data["note"]
    assert (folder / "TASK.md").read_text() == TASK_MD
    assert not any(t.consolidated for t in list_all(folder))


def test_task_md_changed_while_the_consolidator_ran_is_not_overwritten(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = mem.open_case()
    _talk(mem, monkeypatch, "we decided to ship it", T0)
    mem.emu.add_fault(Fault("delay", match="/v1/messages", seconds=1.5))
    newer = TASK_MD + "\n## Re-investigated meanwhile\n"
    seen = len(mem.requests())

    def rewrite_during_the_call() -> None:
        deadline = time.monotonic() + 20
        while len(mem.emu.recorded("/v1/messages")) <= seen and time.monotonic() < deadline:
            time.sleep(0.02)
        (folder / "TASK.md").write_text(newer)

    writer = threading.Thread(target=rewrite_during_the_call)
    writer.start()
    data = mem.consolidate(CASE)["data"]
    writer.join()
    assert data["outcome"] == "skipped" and "changed while the consolidator ran" in data["note"]
    assert (folder / "TASK.md").read_text() == newer
    assert not any(t.consolidated for t in list_all(folder))


def test_a_held_lock_skips_with_exit_3_and_due_reports_it(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness_cli.state.locks import workflow_lock

    mem.open_case()
    _talk(mem, monkeypatch, "we decided to ship it", T0)
    calls = len(mem.requests())
    with workflow_lock("consolidate", CASE):
        code, _, err = mem.cli("consolidate", CASE)
        assert code == 3 and "locked by another run" in err
        due = mem.consolidate("--due")
    assert due["data"]["locked"] == [CASE] and len(mem.requests()) == calls


def test_due_refuses_extra_arguments(mem: Memory) -> None:
    code, _, err = mem.cli("consolidate", "--due", CASE)
    assert code == 2 and "--due walks every open case" in err


def _payload_file(mem: Memory) -> str:
    found = sorted((mem.root / "harness-home" / "payloads").glob("*-consolidate-*.json"))
    return str(found[-1])


def _git_log(mem: Memory) -> str:
    import subprocess

    return subprocess.run(
        ["git", "-C", str(mem.root / "workspace"), "log", "--format=%s"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_force_consolidates_without_a_signal_but_not_without_transcripts(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.open_case()
    with at(monkeypatch, T0):
        assert mem.consolidate(CASE, "--force")["data"]["outcome"] == "skipped"
    _talk(mem, monkeypatch, QUIET, T0)
    with at(monkeypatch, T0 + timedelta(minutes=1)):
        result = mem.consolidate(CASE, "--force")
    assert result["data"]["outcome"] == "written" and result["data"]["signals"] == []
    assert "(forced)" in result["changed"][0]
