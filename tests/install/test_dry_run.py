"""`--dry-run` on the subcommands that write outward: the real decision code runs on what the
services really say, the output names what would be posted, pushed and started, and nothing
leaves — no Slack write, no push, no model call — while this machine's own state is left
exactly as it was, so the real run afterwards loses nothing."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.sandbox.runner import Sandbox


@pytest.fixture
def box(
    cli: Any, config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Sandbox]:
    with Sandbox(tmp_path / "sandbox") as sandbox:
        for key, value in sandbox.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("HARNESS_RUNTIME", "anthropic")
        remote = tmp_path / "cases.git"
        subprocess.run(["git", "init", "--bare", "-q", str(remote)], check=True)
        assert cli("init", "--remote", str(remote))[0] == 0
        yield sandbox


def fingerprint(tmp_path: Path) -> dict[str, str]:
    """Every file of HARNESS_HOME (logs aside) and the workspace remote's refs."""
    home = tmp_path / "harness-home"
    out = {
        str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(home.rglob("*"))
        if p.is_file() and "logs" not in p.parts
    }
    refs = subprocess.run(
        ["git", "-C", str(tmp_path / "cases.git"), "show-ref"], capture_output=True, text=True
    )
    out["remote refs"] = refs.stdout
    ws = tmp_path / "workspace"
    out["workspace files"] = "\n".join(
        sorted(str(p) for p in ws.rglob("*") if ".git" not in p.parts)
    )
    return out


def test_poll_slack_dry_run_says_what_it_would_do_and_loses_nothing(
    cli: Any, box: Sandbox, tmp_path: Path
) -> None:
    box.slack.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-42: the invoice total is wrong")
    before, posts = fingerprint(tmp_path), box.slack.calls("chat.postMessage")
    code, _, err = cli("poll-slack", "--dry-run")
    assert code == 0, err
    assert "dry run: nothing left this machine" in err
    assert "would post to D0SELF" in err
    assert "would start investigate on AAA-42" in err
    assert box.slack.calls("chat.postMessage") == posts
    assert fingerprint(tmp_path) == before
    # the real run afterwards still sees the ticket
    code, _, err = cli("poll-slack")
    assert code == 0, err
    assert (tmp_path / "workspace/case-workspaces/AAA-42/case.json").exists()
    assert box.slack.calls("chat.postMessage") > posts


def test_a_workflow_dry_run_stops_before_the_model(cli: Any, box: Sandbox, tmp_path: Path) -> None:
    ticket = tmp_path / "ticket.txt"
    ticket.write_text("AAA-43: discounts are off by one\n")
    assert cli("case", "new", "-p", "team-a", "-t", "AAA-43", "--text", str(ticket))[0] == 0
    before = fingerprint(tmp_path)
    code, _, err = cli("investigate", "AAA-43", "--dry-run", "--json")
    assert code == 0, err
    plan = json.loads(err.strip().splitlines()[-1])
    assert plan["dry_run"] is True and plan["stopped_before"]
    assert any(a.startswith("would call the model as") for a in plan["would"])
    assert box.anthropic.snapshot()["messages"] == 0
    assert fingerprint(tmp_path) == before
    case = json.loads((tmp_path / "workspace/case-workspaces/AAA-43/case.json").read_text())
    assert case["status"] == "new"


@pytest.mark.parametrize(
    "argv",
    [
        ("case", "new", "-p", "team-a", "-t", "AAA-44: by hand", "--dry-run"),
        ("pause", "2h", "--dry-run"),
        ("admin", "oncall pause 1h", "--dry-run"),
        ("mr-monitor", "--dry-run"),
    ],
)
def test_other_writers_write_nothing_in_a_dry_run(
    cli: Any, box: Sandbox, tmp_path: Path, argv: tuple[str, ...]
) -> None:
    before, posts = fingerprint(tmp_path), box.slack.calls("chat.postMessage")
    code, _, err = cli(*argv)
    assert code == 0, err
    assert "dry run: nothing left this machine" in err
    assert fingerprint(tmp_path) == before
    assert box.slack.calls("chat.postMessage") == posts


def test_help_of_a_writer_names_dry_run(cli: Any) -> None:
    code, out, _ = cli("poll-slack", "--help")
    assert code == 0 and "--dry-run" in out
