"""L3: submitting the MR through python-gitlab / PyGithub against the GitLab / GitHub emulator
(the ``forge`` parameter), from a real clone of the sample project: style rejection sends
nothing, Draft until acceptance passes on the head, a second submission adopts the open MR
(GitLab's 409, GitHub's 422), and the MR is registered for mr-monitor and on the case."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli import wiring
from harness_cli.config import Thresholds
from harness_cli.delivery.acceptance import AcceptanceRecord, run_acceptance
from harness_cli.delivery.mr import StyleRejected, compose_prompt_section, submit_mr
from harness_cli.delivery.reply_gate import WireEvidence, reply_gate
from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_BUG_FIX, SAMPLE_PROJECT_PATH
from harness_cli.services.gitlab import GitLab
from harness_cli.workspace import registry
from tests.forges import Side, start

REPO = Path(__file__).resolve().parents[2]
BRANCH = "fix/bulk-discount"
CASE = "CASE-7"
TITLE = "Apply the bulk discount from ten units on"
PROSE = """Orders of exactly ten units were charged full price: the bulk discount compared
the quantity with `>` while the README promises the discount from ten units on.

Changes:
- `pricing/discount.py`: compare the quantity with `>=` against `BULK_THRESHOLD`"""
DESCRIPTION = (
    PROSE
    + """

`python -m pytest -q`

    .......                                                [100%]
    7 passed in 0.02s
"""
)
"""What a model writes: prose, a Changes list, and a proof of work it made up (7 passed)."""
COMMITS = ["Apply the bulk discount from ten units on"]


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


@pytest.fixture
def emu(forge: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Side]:
    """The sample project on ``forge`` (both, by the ``forge`` parameter)."""
    for side in start(forge, tmp_path, monkeypatch):
        # Pipelines on the MR are not what these tests are about; skip running pytest in CI.
        for _ in range(4):
            side.force_ci("success")
        yield side


@pytest.fixture
def gitlab(emu: Side) -> GitLab:
    return wiring.gitlab()


@pytest.fixture
def clone(gitlab: GitLab, tmp_path: Path) -> Path:
    """A clone with the fix committed and pushed on BRANCH."""
    work = tmp_path / "clone"
    url = str(gitlab.project(SAMPLE_PROJECT_PATH)["http_url_to_repo"])
    git(tmp_path, "clone", "--quiet", url, str(work))
    git(work, "checkout", "--quiet", "-b", BRANCH)
    rel, old, new = SAMPLE_BUG_FIX
    path = work / rel
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    git(work, "commit", "--quiet", "-am", COMMITS[0])
    git(work, "push", "--quiet", "origin", BRANCH)
    return work


@pytest.fixture
def case_dir() -> Path:
    opened = registry.open_case(
        Thresholds(), case_id=CASE, project="team-a", title="bulk discount", sync_now=False
    )
    return opened.dir


def submit(gitlab: GitLab, clone: Path, case_dir: Path, **overrides: Any) -> Any:
    args: dict[str, Any] = {
        "project": SAMPLE_PROJECT_PATH,
        "source_branch": BRANCH,
        "target_branch": "main",
        "title": TITLE,
        "description": DESCRIPTION,
        "commit_messages": COMMITS,
        "case_id": CASE,
        "case_dir": case_dir,
        "acceptance": None,
        "head_sha": git(clone, "rev-parse", "HEAD"),
        "thresholds": Thresholds(),
        **overrides,
    }
    return submit_mr(gitlab, **args)


def mrs(emu: Side) -> list[dict[str, Any]]:
    return emu.mrs()


def monitored(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "harness-home" / "monitored-mrs.json"
    return dict(json.loads(path.read_text())["mrs"]) if path.exists() else {}


def test_a_bold_tag_is_rejected_and_nothing_is_sent(
    emu: Side, gitlab: GitLab, clone: Path, case_dir: Path, tmp_path: Path
) -> None:
    bad = "**Root cause:** the comparison was off by one.\n\n" + DESCRIPTION
    with pytest.raises(StyleRejected) as err:
        submit(gitlab, clone, case_dir, description=bad)
    assert [v.code for v in err.value.violations] == ["S3"]
    assert "S3 (description line 1)" in err.value.feedback()
    assert emu.creates() == 0
    assert mrs(emu) == []
    assert monitored(tmp_path) == {}
    assert registry.load_case(CASE).mrs == []


def test_a_bad_commit_message_is_rejected_too(
    emu: Side, gitlab: GitLab, clone: Path, case_dir: Path
) -> None:
    messages = [*COMMITS, "Fixed the tests.\n\nCo-Authored-By: Claude <noreply@anthropic.com>"]
    with pytest.raises(StyleRejected) as err:
        submit(gitlab, clone, case_dir, commit_messages=messages)
    assert {(v.code, v.where) for v in err.value.violations} == {
        ("S1", "commit 2"),
        ("S9", "commit 2"),
        ("S10", "commit 2"),
    }
    assert emu.creates() == 0


def test_passing_record_for_head_opens_a_ready_mr_and_registers_it(
    emu: Side, gitlab: GitLab, clone: Path, case_dir: Path, tmp_path: Path
) -> None:
    record = run_acceptance(clone, ["python -m pytest -q"], case_dir)
    assert record.passed, record.reason
    head = git(clone, "rev-parse", "HEAD")
    result = submit(gitlab, clone, case_dir, acceptance=record)
    assert result.ready and not result.adopted
    (mr,) = mrs(emu)
    assert mr["title"] == TITLE
    # the model's proof of work is gone; the harness's, from the record of this head, is there
    assert mr["description"].startswith(PROSE) and "7 passed" not in mr["description"]
    proof = mr["description"][len(PROSE) :]
    assert f"ran the required checks itself on {head[:12]}, the head of this MR" in proof
    assert "    $ python -m pytest -q\n" in proof and "5 passed" in proof
    assert "    (exit 0)" in proof
    assert mr["sha"] == head
    entry = monitored(tmp_path)[f"{SAMPLE_PROJECT_PATH}!{result.iid}"]
    assert entry["case_id"] == CASE
    assert entry["case_dir"] == str(case_dir)
    assert entry["last_sha"] == head
    assert entry["source_branch"] == BRANCH
    assert entry["web_url"] == result.web_url and result.web_url
    (case_mr,) = registry.load_case(CASE).mrs
    assert (case_mr.project, case_mr.iid, case_mr.web_url) == (
        SAMPLE_PROJECT_PATH,
        result.iid,
        result.web_url,
    )


def test_without_a_record_the_mr_is_a_draft(
    emu: Side, gitlab: GitLab, clone: Path, case_dir: Path
) -> None:
    result = submit(gitlab, clone, case_dir)
    assert not result.ready
    (mr,) = mrs(emu)
    assert mr["title"] == f"Draft: {TITLE}"
    assert "has no run of the required checks" in mr["description"]


def test_an_adopted_mr_keeps_its_human_title_and_description(
    emu: Side, gitlab: GitLab, clone: Path, case_dir: Path, tmp_path: Path
) -> None:
    from harness_cli.state import files
    from harness_cli.state.models import MonitoredMr

    human = gitlab.create_mr(
        SAMPLE_PROJECT_PATH, source_branch=BRANCH, target_branch="main",
        title="Bulk discount at ten (Alice's MR)", description="Alice wrote this.",
    )  # fmt: skip
    with files.monitored_mrs().update() as state:  # what `mr-monitor --watch` records
        state.mrs[human.key] = MonitoredMr(
            project=SAMPLE_PROJECT_PATH, iid=human.iid, case_id=CASE, case_dir=str(case_dir),
            adopted=True,
        )  # fmt: skip
    record = run_acceptance(clone, ["python -m pytest -q"], case_dir)
    result = submit(gitlab, clone, case_dir, acceptance=record)
    assert result.adopted and result.iid == human.iid
    (mr,) = mrs(emu)
    assert (mr["title"], mr["description"]) == (
        "Bulk discount at ten (Alice's MR)",
        "Alice wrote this.",
    )
    [note] = mr["notes"]
    assert note["author"] == "harness-bot" and "5 passed" in note["body"]


def fake_record(head: str, *, passed: bool = True, dirty: list[str] | None = None) -> Any:
    return AcceptanceRecord.model_validate(
        {
            "worktree": "/nowhere",
            "head_sha": head,
            "snapshot_digest": "0" * 64,
            "dirty_paths": dirty or [],
            "passed": passed,
            "started_at": "2026-01-01T00:00:00Z",
            "finished_at": "2026-01-01T00:00:01Z",
        }
    )


@pytest.mark.parametrize(
    "record",
    [
        pytest.param(lambda head: fake_record(head, passed=False), id="failed"),
        pytest.param(lambda head: fake_record("0" * 40), id="other-sha"),
        pytest.param(lambda head: fake_record(head, dirty=["README.md"]), id="dirty-snapshot"),
    ],
)
def test_a_record_that_is_not_a_pass_for_exactly_head_keeps_it_draft(
    emu: Side, gitlab: GitLab, clone: Path, case_dir: Path, record: Any
) -> None:
    result = submit(gitlab, clone, case_dir, acceptance=record(git(clone, "rev-parse", "HEAD")))
    assert not result.ready
    assert mrs(emu)[0]["title"].startswith("Draft: ")


def test_second_submit_adopts_the_open_mr_and_marks_it_ready_after_acceptance(
    emu: Side, gitlab: GitLab, clone: Path, case_dir: Path, tmp_path: Path
) -> None:
    first = submit(gitlab, clone, case_dir)
    assert not first.ready

    record = run_acceptance(clone, ["python -m pytest -q"], case_dir)
    revised = DESCRIPTION.replace("full price", "the full price")
    second = submit(gitlab, clone, case_dir, acceptance=record, description=revised)
    assert second.adopted and second.ready
    assert second.iid == first.iid
    (mr,) = mrs(emu)
    assert mr["title"] == TITLE
    assert mr["description"].startswith(revised.split("\n\n`python")[0])
    assert list(monitored(tmp_path)) == [f"{SAMPLE_PROJECT_PATH}!{first.iid}"]
    assert len(registry.load_case(CASE).mrs) == 1

    # A new commit after the accepted one: the MR goes back to draft until acceptance reruns.
    (clone / "README.md").write_text("# pricing-service\n\nUpdated.\n", encoding="utf-8")
    git(clone, "commit", "--quiet", "-am", "Shorten the README")
    git(clone, "push", "--quiet", "origin", BRANCH)
    third = submit(gitlab, clone, case_dir, acceptance=record, description=revised)
    assert third.adopted and not third.ready
    assert mrs(emu)[0]["title"] == f"Draft: {TITLE}"
    head = git(clone, "rev-parse", "HEAD")
    assert monitored(tmp_path)[f"{SAMPLE_PROJECT_PATH}!{first.iid}"]["last_sha"] == head


def test_compose_prompt_section_reads_the_sop_each_time(tmp_path: Path) -> None:
    sops = tmp_path / "sops"
    sops.mkdir()
    shipped = (REPO / "sops" / "STYLE.md").read_text(encoding="utf-8")
    (sops / "STYLE.md").write_text(shipped, encoding="utf-8")
    section = compose_prompt_section(sops)
    assert "No bold inline tags" in section
    (sops / "STYLE.md").write_text(shipped + "\n6. Name the ticket in the first sentence.\n")
    assert "Name the ticket in the first sentence" in compose_prompt_section(sops)
    (sops / "STYLE.md").unlink()
    # an operator without their own STYLE.md gets the packaged one, never an error
    assert compose_prompt_section(sops) == section


def test_the_reply_gate_reads_only_the_wire() -> None:
    ours, old = "a" * 40, "b" * 40
    moved = WireEvidence(remote_before=old, remote_after=ours, pushed_sha=ours)
    assert reply_gate(moved, "renamed it", note_is_current=True) == (
        f"Done, updated in {ours[:8]}: renamed it"
    )
    assert reply_gate(moved, "renamed it", note_is_current=False) is None  # a newer note
    assert reply_gate(moved, "", note_is_current=True) is None  # nothing specific to say
    nothing = WireEvidence(remote_before=old, remote_after=old, pushed_sha=None)
    assert reply_gate(nothing, "I renamed it", note_is_current=True) is None
    assert "no push" in nothing.why_not()
    same = WireEvidence(remote_before=old, remote_after=old, pushed_sha=old)  # exit 0, no-op
    assert reply_gate(same, "renamed", note_is_current=True) is None
    assert "did not move" in same.why_not()
    theirs = WireEvidence(remote_before=old, remote_after="c" * 40, pushed_sha=ours)
    assert reply_gate(theirs, "renamed", note_is_current=True) is None
    assert "not at the commit this run pushed" in theirs.why_not()
