"""Push recovery on real git (a bare origin), the scripted model behind the Anthropic
emulator (L2) and the Slack emulator (L3). Success is only ever read from the remote itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_cli import wiring
from harness_cli.agents.factory import build_runtime
from harness_cli.config import Config, load_config
from harness_cli.delivery import worktrees
from harness_cli.delivery.push.heal import HealReport, parse_report, self_heal_push_loop
from harness_cli.delivery.push.rebase import real_push
from harness_cli.delivery.push.recovery import PushOutcome, pre_push_rebase, push_with_recovery
from harness_cli.delivery.thresholds import DeliveryThresholds
from harness_cli.errors import PolicyRefused
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.services.claude_cli import find_claude
from harness_cli.state import files
from harness_cli.state.models import ThreadEntry
from tests.delivery.conftest import Origin, commit

CASE = "T-7"
BRANCH = f"harness/{CASE}"
THEIRS = "greeting = hi\ncolour = blue\n"
OURS = "greeting = hello, world\ncolour = blue\n"
RESOLVED = "greeting = hi, world\ncolour = blue\n"
CLI_MARKS = [
    pytest.mark.claude_cli,
    pytest.mark.slow,
    pytest.mark.skipif(find_claude() is None, reason="claude CLI not found: run `make claude-cli`"),
]


@pytest.fixture
def cfg(config_dir: Path) -> Config:
    return load_config(config_dir)


@pytest.fixture
def case_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "case"
    folder.mkdir()
    return folder


@pytest.fixture
def conflicted(make_wt, origin: Origin) -> worktrees.Worktree:
    """The case branch is on origin; a reviewer then pushed a change to the same line the
    case's new, unpushed commit changes — a plain push is refused, a rebase conflicts."""
    wt = make_wt(CASE)
    commit(wt, "NOTES.md", "first pass\n", "first pass")
    assert pre_push_rebase(wt).ok
    assert real_push(wt).ok
    origin.push_change(BRANCH, "app.txt", THEIRS, "reviewer: say hi")
    commit(wt, "app.txt", OURS, "case: greet the world")
    return wt


def recover(
    wt: worktrees.Worktree,
    cfg: Config,
    case_dir: Path,
    task: str,
    runtime: str = "anthropic",
    thresholds: DeliveryThresholds | None = None,
) -> PushOutcome:
    return push_with_recovery(
        wt,
        runtime=build_runtime(runtime),
        outbound=wiring.outbound(cfg),
        forge=wiring.gitlab(),
        cfg=cfg,
        case_id=CASE,
        task_text=task,
        case_dir=case_dir,
        thresholds=thresholds,
    )


def healer_calls(model: AnthropicEmulator) -> list[Any]:
    return [c for c in model.calls if c.role == "push-healer" and c.tools_present]


def trail(outcome: PushOutcome) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(outcome.trail_path).read_text())
    return data


# -- L1 -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["main", "own branch"])
def test_l1_rebases_over_a_concurrent_commit_and_pushes(
    where: str,
    make_wt,
    origin: Origin,
    cfg: Config,
    case_dir: Path,
    model: AnthropicEmulator,
    slack_emu: Any,
) -> None:
    wt = make_wt(CASE)
    if where == "own branch":  # pushed once already; a teammate added to it since
        commit(wt, "NOTES.md", "first pass\n", "first pass")
        assert real_push(wt).ok
        theirs = origin.push_change(BRANCH, "README.md", "# shop (reviewed)\n", "review")
    else:  # a fresh branch; the default branch moved on meanwhile
        theirs = origin.push_change("main", "README.md", "# shop (upstream)\n", "upstream")
    ours = commit(wt, "app.txt", OURS, "case: greet the world")

    outcome = recover(wt, cfg, case_dir, "Greet the world.")

    assert outcome.ok and outcome.layer == "L1" and outcome.heal is None
    assert outcome.rebase.onto == ("origin/main" if where == "main" else f"origin/{BRANCH}")
    tip = origin.sha(BRANCH)
    assert tip == outcome.pushed_sha == wt.git().head_sha() != ours  # rebased, then pushed
    assert wt.git().is_ancestor(theirs, tip)
    assert origin.show(BRANCH, "app.txt") == OURS
    assert model.calls == [] and slack_emu.messages("D0SELF") == []  # no tokens, no DM
    saved = trail(outcome)
    assert saved["layer"] == "L1" and saved["ok"] is True and saved["pushed_sha"] == tip
    assert Path(outcome.trail_path).parent == case_dir / "delivery"


def test_l1_aborts_a_conflicting_rebase_and_lists_the_files(
    conflicted: worktrees.Worktree,
) -> None:
    git = conflicted.git()
    head = git.head_sha()
    result = pre_push_rebase(conflicted)
    assert not result.ok and result.onto == f"origin/{BRANCH}"
    assert result.conflicts == ["app.txt"] and "app.txt" in result.error
    assert "<<<<<<<" in result.hunks["app.txt"] and "greeting = hi" in result.hunks["app.txt"]
    assert not git.rebase_in_progress() and git.head_sha() == head
    assert git.current_branch() == BRANCH and git.status_porcelain() == ""


def test_a_protected_branch_is_refused_before_anything_runs(
    make_wt, cfg: Config, case_dir: Path, origin: Origin, slack_emu: Any
) -> None:
    wt = make_wt(CASE)
    as_main = worktrees.Worktree(
        path=wt.path, branch="main", base_branch="main", base_sha=wt.base_sha,
        project=wt.project, case_id=CASE,
    )  # fmt: skip
    before = origin.sha("main")
    with pytest.raises(PolicyRefused, match="not a case branch"):
        recover(as_main, cfg, case_dir, "anything")
    assert origin.sha("main") == before


# -- L2 -----------------------------------------------------------------------------------------


def _resolve_script(model: AnthropicEmulator) -> None:
    model.load_script(
        "push_heal", {"onto": f"origin/{BRANCH}", "file": "app.txt", "resolved": RESOLVED}
    )


@pytest.mark.parametrize("runtime", [pytest.param("claude-code", marks=CLI_MARKS), "anthropic"])
def test_l2_resolves_the_conflict_and_the_real_push_succeeds(
    runtime: str,
    conflicted: worktrees.Worktree,
    origin: Origin,
    cfg: Config,
    case_dir: Path,
    model: AnthropicEmulator,
    slack_emu: Any,
) -> None:
    _resolve_script(model)
    main_before, theirs = origin.sha("main"), origin.sha(BRANCH)
    task = "[scenario: resolve] Greet the whole world from the shop's landing page."

    outcome = recover(conflicted, cfg, case_dir, task, runtime=runtime)

    assert outcome.ok and outcome.layer == "L2", outcome.heal
    assert outcome.rebase.conflicts == ["app.txt"]
    assert outcome.heal is not None and len(outcome.heal.attempts) == 1
    attempt = outcome.heal.attempts[0]
    assert attempt.plan_confidence == 85 and attempt.confidence == 85
    assert attempt.push is not None and attempt.push.ok
    assert not attempt.push.forced  # the resolution is a fast-forward of the remote branch
    tip = origin.sha(BRANCH)
    assert tip == outcome.pushed_sha == conflicted.git().head_sha()
    assert conflicted.git().is_ancestor(theirs or "", tip or "")  # the reviewer's commit kept
    assert origin.show(BRANCH, "app.txt") == RESOLVED
    assert origin.sha("main") == main_before
    assert not conflicted.git().rebase_in_progress() and conflicted.git().status_porcelain() == ""
    assert model.unmatched() == []
    assert [c.rule for c in healer_calls(model)][-1] == "resolve — report"
    prompts = [json.dumps(r.json_body()) for r in model.recorded("/v1/messages")]
    plan = next(p for p in prompts if "[harness-role: push-healer-plan]" in p)
    assert '"name": "Bash"' not in plan and '"name": "Edit"' not in plan  # plans cannot act
    prompt = next(p for p in prompts if "[harness-role: push-healer]" in p)
    for expected in ("Greet the whole world", "app.txt", "[phase: act]",
                     "<<<<<<<", "git status --short", "Never force-push"):  # fmt: skip
        assert expected in prompt, expected
    assert slack_emu.messages("D0SELF") == []
    assert trail(outcome)["heal"]["attempts"][0]["confidence"] == 85


def test_l2_claimed_success_without_a_push_escalates_after_three_attempts(
    conflicted: worktrees.Worktree,
    origin: Origin,
    cfg: Config,
    case_dir: Path,
    model: AnthropicEmulator,
    slack_emu: Any,
) -> None:
    model.load_script("push_heal", {"onto": f"origin/{BRANCH}", "base": "main"})
    parent = slack_emu.post_as("D0SELF", "U0OPERATOR", f"case {CASE}")["ts"]
    with files.task_thread_map().update() as threads:
        threads.threads["D0SELF/" + parent] = ThreadEntry(
            channel="D0SELF", thread_ts=parent, case_id=CASE, case_dir=str(case_dir),
            role="case_thread",
        )  # fmt: skip
    main_before, theirs = origin.sha("main"), origin.sha(BRANCH)
    ours = conflicted.git().head_sha()

    outcome = recover(conflicted, cfg, case_dir, "[scenario: claim] Greet the world.")

    assert not outcome.ok and outcome.layer == "L3"
    heal = outcome.heal
    assert heal is not None and not heal.ok and not heal.bailed
    assert [a.confidence for a in heal.attempts] == [90, 90, 90]
    for a in heal.attempts:  # the model said "pushed"; the wire said no, every time
        assert a.push is not None and not a.push.ok and a.push.rejected and not a.push.forced
        assert any("git push --force origin HEAD:main" in call for call in a.tool_calls)
    assert "no force: a rebase or merge is still in progress" in heal.attempts[0].note
    assert origin.sha("main") == main_before  # the protected default branch never moved
    assert origin.sha(BRANCH) == theirs  # the reviewer's commit was not overwritten
    assert conflicted.git().head_sha(f"refs/heads/{BRANCH}") == ours  # nor was ours lost
    assert heal.backup_sha == ours
    assert len(healer_calls(model)) == 9  # three sessions of three turns

    posted = [m for m in slack_emu.messages("D0SELF") if m["ts"] != parent]
    assert len(posted) == 1  # exactly one DM
    dm = posted[0]
    assert dm.get("thread_ts") == parent and outcome.escalation_ts == dm["ts"]
    text = dm["text"]
    for expected in (CASE, BRANCH, "#1", "#2", "#3", "confidence 90", "git push --force",
                     "git status --short", "Last push error", "rejected",
                     "UU app.txt", outcome.trail_path):  # fmt: skip
        assert expected in text, expected
    saved = trail(outcome)
    assert saved["layer"] == "L3" and saved["escalation_ts"] == dm["ts"]
    assert len(saved["heal"]["attempts"]) == 3


def test_l2_bail_under_the_floor_stops_at_once_and_escalates(
    conflicted: worktrees.Worktree,
    origin: Origin,
    cfg: Config,
    case_dir: Path,
    model: AnthropicEmulator,
    slack_emu: Any,
) -> None:
    model.load_script("push_heal", {"file": "app.txt"})
    before = origin.sha(BRANCH)
    ours = conflicted.git().head_sha()

    outcome = recover(conflicted, cfg, case_dir, "[scenario: bail] Change the pricing rule.")

    assert not outcome.ok and outcome.layer == "L3"
    assert outcome.heal is not None and outcome.heal.bailed
    assert len(outcome.heal.attempts) == 1 and healer_calls(model) == []  # it never acted
    assert len([c for c in model.calls if c.role == "push-healer-plan"]) == 1
    attempt = outcome.heal.attempts[0]
    assert attempt.bailed and attempt.confidence == 40 and attempt.push is None
    assert attempt.plan_confidence == 40 and attempt.tool_calls == []
    assert origin.sha(BRANCH) == before and conflicted.git().head_sha() == ours
    posted = slack_emu.messages("D0SELF")
    assert len(posted) == 1 and "thread_ts" not in posted[0]  # no case thread: top level
    assert "bailed at attempt 1 (confidence 40)" in posted[0]["text"]


def test_l2_that_bails_after_acting_leaves_the_branch_as_it_was(
    conflicted: worktrees.Worktree,
    origin: Origin,
    cfg: Config,
    case_dir: Path,
    model: AnthropicEmulator,
    slack_emu: Any,
) -> None:
    """A blind "take theirs" commit, then a 40: nothing of it may stay on the case branch
    (a later push would carry it to origin)."""
    model.load_script("push_heal", {"onto": f"origin/{BRANCH}", "file": "app.txt"})
    before, ours = origin.sha(BRANCH), conflicted.git().head_sha()

    outcome = recover(conflicted, cfg, case_dir, "[scenario: blind] Greet the world.")

    assert not outcome.ok and outcome.layer == "L3"
    git = conflicted.git()
    assert git.head_sha(f"refs/heads/{BRANCH}") == ours and git.current_branch() == BRANCH
    assert not git.rebase_in_progress() and git.status_porcelain() == ""
    assert outcome.heal is not None and outcome.heal.bailed
    [attempt] = outcome.heal.attempts
    assert (attempt.plan_confidence, attempt.confidence) == (80, 40) and attempt.push is None
    assert any("checkout --theirs" in call for call in attempt.tool_calls)
    assert attempt.restored and git.head_sha(attempt.kept_at) not in (None, ours)
    assert origin.sha(BRANCH) == before
    [dm] = slack_emu.messages("D0SELF")
    assert "bailed at attempt 1 (confidence 40)" in dm["text"]
    assert "plan confidence 80" in dm["text"] and "checkout --theirs" in dm["text"]


def test_dropping_the_case_commits_is_never_a_success(
    conflicted: worktrees.Worktree,
    origin: Origin,
    cfg: Config,
    case_dir: Path,
    model: AnthropicEmulator,
    slack_emu: Any,
) -> None:
    """A model that "fixes" the push by resetting onto the remote would get an exit-0 no-op
    push; the harness refuses it and keeps the commits at the backup ref."""
    reset = {"name": "Bash", "input": {"command": f"git reset -q --hard origin/{BRANCH}"}}
    claim = '{"confidence": 95, "actions": ["reset"], "summary": "ok"}'
    rules = [
        {"when": {"turn": 0, "tools": "present"}, "reply": {"tool_calls": [reset]}},
        {"reply": {"text": claim}},
    ]
    plan = [{"reply": {"text": '{"confidence": 95, "actions": ["reset"]}'}}]
    model.load_script({"roles": {"push-healer": rules, "push-healer-plan": plan}})
    ours = conflicted.git().head_sha()

    outcome = recover(
        conflicted, cfg, case_dir, "Greet.", thresholds=DeliveryThresholds(push_heal_attempts=1)
    )

    assert not outcome.ok and outcome.layer == "L3"
    assert outcome.heal is not None
    push = outcome.heal.attempts[0].push
    assert push is not None and push.refused and "unpushed commits" in push.error
    assert conflicted.git().head_sha(outcome.heal.backup_ref) == ours
    assert len(slack_emu.messages("D0SELF")) == 1


# -- the report parser ----------------------------------------------------------------------------


def test_parse_report_reads_the_last_json_block() -> None:
    def parsed(text: str) -> HealReport:
        report = parse_report(text)
        assert report is not None, text
        return report

    fenced = parsed('Done.\n```json\n{"confidence": 85, "actions": ["a"], "summary": "s"}\n```')
    assert (fenced.confidence, fenced.actions, fenced.summary) == (85, ["a"], "s")
    assert parsed('{"confidence": 10} then {"confidence": 77}').confidence == 77
    assert parsed('{"confidence": 250}').confidence == 100
    assert parsed('{"confidence": 70, "actions": ["git rebase --continue"]}').says_rebased()
    assert not parsed('{"confidence": 70, "actions": ["git merge"]}').says_rebased()
    assert parse_report("I pushed it, trust me.") is None
    assert parse_report('{"confidence": "high"}') is None


# -- force-with-lease, only on the case's own branch and only when nothing is lost ---------------


def _rebase_onto_main_script(model: AnthropicEmulator) -> None:
    rebase = {"name": "Bash", "input": {"command": "git rebase -q origin/main"}}
    report = '{"confidence": 80, "actions": ["git rebase origin/main"], "rebased": true}'
    rules = [
        {"when": {"turn": 0, "tools": "present"}, "reply": {"tool_calls": [rebase]}},
        {"reply": {"text": report}},
    ]
    plan = [{"reply": {"text": '{"confidence": 80, "actions": ["git rebase origin/main"]}'}}]
    model.load_script({"roles": {"push-healer": rules, "push-healer-plan": plan}})


@pytest.mark.parametrize("reviewer_pushed", [False, True])
def test_a_rebased_branch_is_pushed_with_a_lease_unless_remote_work_would_be_lost(
    reviewer_pushed: bool, make_wt, origin: Origin, model: AnthropicEmulator
) -> None:
    wt = make_wt(CASE)
    pushed = commit(wt, "NOTES.md", "first pass\n", "first pass")
    assert real_push(wt).ok
    origin.push_change("main", "README.md", "# shop (upstream)\n", "upstream")
    if reviewer_pushed:
        origin.push_change(BRANCH, "REVIEW.md", "looks good\n", "reviewer note")
    commit(wt, "app.txt", OURS, "case: greet the world")
    _rebase_onto_main_script(model)
    main_before, remote_before = origin.sha("main"), origin.sha(BRANCH)

    heal = self_heal_push_loop(
        wt,
        build_runtime("anthropic"),
        "Greet the world.",
        [],
        last_error="the push was rejected",
        thresholds=DeliveryThresholds(push_heal_attempts=1),
    )

    attempt = heal.attempts[0]
    assert attempt.push is not None and origin.sha("main") == main_before
    if reviewer_pushed:  # the reviewer's commit is not in the rebased branch: no force
        assert not heal.ok and not attempt.push.forced and "would be lost" in attempt.note
        assert origin.sha(BRANCH) == remote_before
    else:
        assert heal.ok and attempt.push.ok and attempt.push.forced
        tip = origin.sha(BRANCH)
        assert tip == wt.git().head_sha() and tip != remote_before
        assert wt.git().is_ancestor(main_before or "", tip or "")
        assert not wt.git().is_ancestor(pushed, tip or "")  # history rewritten, by lease


def test_l2_that_cannot_start_escalates_with_the_reason(
    conflicted: worktrees.Worktree,
    cfg: Config,
    case_dir: Path,
    slack_emu: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HARNESS_CLAUDE_BIN", str(case_dir / "no-such-claude"))
    outcome = recover(conflicted, cfg, case_dir, "Greet.", runtime="claude-code")
    assert not outcome.ok and outcome.layer == "L3" and outcome.heal is not None
    assert [a.stop for a in outcome.heal.attempts] == ["error"]
    (dm,) = slack_emu.messages("D0SELF")
    assert "L2 could not start" in dm["text"] and "not installed" in dm["text"]
