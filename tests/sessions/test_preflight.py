"""The preflight gate wired into every coordinated workflow (issue #19 point 3): deny → exit 4
with the holder named and nothing cloned or changed; warn → waiting_for_approval, holding
nothing, one DM; `admin: approve <run>` re-evaluates (still denied when someone took it
meanwhile); unapproved runs are cancelled after 24 h by HARNESS_NOW."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness_cli.services.git import Git

DENY = 'session denied by preflight gate: "{label}" is being worked on by {holder} ({task})'


@pytest.fixture
def ready(cli, harness_ready: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HARNESS_USER", "alice")
    return harness_ready


def _policy(config: Path, **workflows: dict[str, Any]) -> None:
    path = config / "harness.yaml"
    data = yaml.safe_load(path.read_text())
    data.setdefault("sessions", {}).setdefault("workflows", {}).update(workflows)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _payload(tmp_path: Path, workflow: str, case_id: str, ts: str, **extra: Any) -> Path:
    path = tmp_path / f"payload-{workflow}-{case_id}-{ts}.json"
    body = {
        "workflow": workflow,
        "case_id": case_id,
        "case_dir": "",
        "channel": "C0SUPPORT",
        "trigger": {"kind": "new_ticket", "ts": ts},
        "key": f"{workflow}|{case_id}|{ts}",
        **extra,
    }
    path.write_text(json.dumps(body))
    return path


WORKFLOWS = [
    ["investigate", "AAA-5"],
    ["dev-agent", "AAA-5", "--mode", "task"],
    ["dev-agent", "AAA-5", "--mode", "fix_ci"],
    ["dev-agent", "AAA-5", "--mode", "address_review"],
    ["consolidate", "AAA-5"],
    ["finalize", "AAA-5"],
]


def test_every_coordinated_workflow_is_denied_naming_the_holder_and_changes_nothing(
    cli, ready: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("session", "open", "--case", "AAA-5", "--task", "reading the logs")
    assert code == 0, err
    workspace = tmp_path / "workspace"
    head = Git(workspace).head_sha()
    line = DENY.format(label="case AAA-5", holder="claude-code/alice", task="reading the logs")
    for argv in WORKFLOWS:
        code, out, err = cli(*argv)
        assert code == 4, (argv, code, out, err)
        assert line in err, (argv, err)
    assert Git(workspace).head_sha() == head and not Git(workspace).status_porcelain()
    assert not (tmp_path / "worktrees").exists()  # nothing cloned
    assert not (workspace / "case-workspaces" / "AAA-5").exists()


def test_a_repo_path_reservation_denies_a_run_on_it_with_the_issues_exact_line(
    cli, ready: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    args = ["--repo", "acme/billing", "--path", "src/invoice/", "--task", "add proration"]
    assert cli("session", "open", *args)[0] == 0
    payload = _payload(
        tmp_path,
        "dev-agent",
        "AAA-9",
        "1700000000.000100",
        repo="acme/billing",
        args={"mode": "task", "paths": ["src/invoice/rounding.py"]},
    )
    code, _, err = cli("dev-agent", "--payload", str(payload))
    assert code == 4
    assert err.splitlines()[0].startswith(
        'harness: session denied by preflight gate: "acme/billing: src/invoice/" is being worked '
        "on by claude-code/alice (add proration)"
    )
    # another part of the repository is free
    other = _payload(
        tmp_path,
        "dev-agent",
        "AAA-9",
        "1700000000.000200",
        repo="acme/billing",
        args={"mode": "task", "paths": ["docs/"]},
    )
    code, _, err = cli("dev-agent", "--payload", str(other))
    assert code != 4, err


def _waiting_run(err: str) -> str:
    match = re.search(r"waiting_for_approval as run (w-[0-9a-f]+)", err)
    assert match, err
    return match.group(1)


def test_warn_waits_holding_nothing_one_dm_and_approval_re_evaluates_the_gate(
    cli, ready: Path, tmp_path: Path, slack_emu: Any
) -> None:  # type: ignore[no-untyped-def]
    _policy(
        ready,
        investigate={"exclusive": False, "on_overlap": "warn"},
        **{"claude-code": {"exclusive": False, "on_overlap": "warn"}},
    )
    code, out, _ = cli("session", "open", "--case", "AAA-6", "--task", "triage", "--json")
    human = json.loads(out)["data"]["id"]
    payload = _payload(tmp_path, "investigate", "AAA-6", "1700000000.000300")
    code, _, err = cli("investigate", "--payload", str(payload))
    assert code == 0, err
    run = _waiting_run(err)
    assert cli("investigate", "--payload", str(payload))[0] == 0  # the same event again
    dms = [m for m in slack_emu.messages("D0SELF") if f"admin: approve {run}" in m["text"]]
    assert len(dms) == 1, slack_emu.messages("D0SELF")
    _, out, _ = cli("session", "list", "--json")
    assert [h["name"] for h in json.loads(out)["data"]["live"]] == ["claude-code/alice"]
    # meanwhile: the human leaves and another runner takes the case exclusively
    assert cli("session", "close", human)[0] == 0
    code, out, _ = cli(
        "session",
        "open",
        "--workflow",
        "dev-agent",
        "--case",
        "AAA-6",
        "--task",
        "hotfix",
        "--json",
    )
    taker = json.loads(out)["data"]
    code, out, _ = cli("admin", f"approve {run}", "--json")
    said = json.dumps(json.loads(out))
    assert "still refused" in said and f"is being worked on by {taker['name']} (hotfix)" in said
    _, out, _ = cli("session", "status", "--json")
    [state] = [w["state"] for w in json.loads(out)["data"]["waiting"] if w["run"] == run]
    assert state == "denied"
    # a second warned run, approved once the exclusive holder is gone: it starts, past the gate
    assert cli("session", "close", taker["id"])[0] == 0
    assert cli("session", "open", "--case", "AAA-6", "--task", "triage")[0] == 0
    again = _payload(tmp_path, "investigate", "AAA-6", "1700000000.000400")
    run2 = _waiting_run(cli("investigate", "--payload", str(again))[2])
    code, out, _ = cli("admin", f"approve {run2}", "--json")
    assert "approved" in out, out
    folder = tmp_path / "harness-home" / "payloads"
    [approved] = [p for p in folder.glob("*.json") if run2 in p.read_text()]
    code, _, err = cli("investigate", "--payload", str(approved))
    assert "waiting_for_approval" not in err and code != 4, err
    records = [
        json.loads(p.read_text()) for p in (tmp_path / "harness-home" / "sessions").glob("*.json")
    ]
    assert any(r["workflow"] == "investigate" and r["state"] == "closed" for r in records)


def test_an_unapproved_run_is_cancelled_after_24_hours(
    cli, ready: Path, tmp_path: Path, slack_emu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    _policy(
        ready,
        investigate={"exclusive": False, "on_overlap": "warn"},
        **{"claude-code": {"exclusive": False, "on_overlap": "warn"}},
    )
    monkeypatch.setenv("HARNESS_NOW", "2026-03-02T09:00:00+00:00")
    assert cli("session", "open", "--case", "AAA-4", "--task", "triage")[0] == 0
    payload = _payload(tmp_path, "investigate", "AAA-4", "1700000000.000500")
    run = _waiting_run(cli("investigate", "--payload", str(payload))[2])
    monkeypatch.setenv("HARNESS_NOW", "2026-03-03T08:59:00+00:00")
    _, out, _ = cli("session", "status", "--json")
    assert json.loads(out)["data"]["waiting"][0]["state"] == "waiting_for_approval"
    monkeypatch.setenv("HARNESS_NOW", "2026-03-03T09:00:00+00:00")
    code, out, err = cli("poll-slack", "--json")
    assert code == 0, err
    assert f"cancelled unapproved run {run}" in out
    code, out, _ = cli("admin", f"approve {run}", "--json")
    assert "is cancelled (unapproved for 24 h)" in out


def test_a_waiting_run_is_seen_and_approved_from_another_machine_once(
    machines, cli, monkeypatch, config_dir: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """Session 2 point 5: the run waited on machine A; machine B's `admin: approve <run>`
    finds it (the workspace carries it), re-checks the gate and starts it; A's approval of the
    same run afterwards starts nothing."""
    from tests.sessions.conftest import call, here

    _policy(
        config_dir,
        investigate={"exclusive": False, "on_overlap": "warn"},
        **{"claude-code": {"exclusive": False, "on_overlap": "warn"}},
    )
    a, b = machines(2)
    assert (
        call(cli, monkeypatch, a, "session", "open", "--case", "AAA-16", "--task", "triage")[0] == 0
    )
    payload = _payload(tmp_path, "investigate", "AAA-16", "1700000000.000600")
    code, _, err = call(cli, monkeypatch, a, "investigate", "--payload", str(payload))
    assert code == 0, err
    run = _waiting_run(err)
    code, out, err = call(cli, monkeypatch, b, "admin", f"approve {run}", "--json")
    assert code == 0, err + out
    assert f"run {run} approved: investigate on AAA-16 started" in out, out
    [approved] = [p for p in (b.home / "payloads").glob("*.json") if run in p.read_text()]
    assert json.loads(approved.read_text())["args"]["approved_run"] == run
    states = here(cli, monkeypatch, b, "session", "status")["waiting"]
    assert [(w["run"], w["state"]) for w in states] == [(run, "approved")]
    # A approves the same run a moment later: told, nothing dispatched twice
    code, out, err = call(cli, monkeypatch, a, "admin", f"approve {run}", "--json")
    assert code == 0, err + out
    assert f"run {run} is approved" in out or "being approved by another machine" in out, out
    assert not [p for p in (a.home / "payloads").glob("*.json") if run in p.read_text()]
    # two machines approving one run at the same instant: the remote lets exactly one start it
    again = _payload(tmp_path, "investigate", "AAA-16", "1700000000.000700")
    run2 = _waiting_run(call(cli, monkeypatch, a, "investigate", "--payload", str(again))[2])
    procs = [m.popen("admin", f"approve {run2}", "--json") for m in (a, b)]
    said = [p.communicate(timeout=120)[0] for p in procs]
    assert sum(f"run {run2} approved:" in s for s in said) == 1, said
    started = [
        p for m in (a, b) for p in (m.home / "payloads").glob("*.json") if run2 in p.read_text()
    ]
    assert len(started) == 1, said
