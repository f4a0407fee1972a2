"""#20 point 2, end to end: two machines (two HARNESS_HOMEs, two clones of one workspace remote)
race a close against an investigation or a reopen of the same case. Before, the workspace
sync's "keep ours" merge let the stale machine's `awaiting_approval` overwrite the close on the
remote, and both runs exited 0. Now case.json merges by the transition rules: the terminal
state survives on the remote whichever order the pushes land in, the refused side's run exits
with a clear line, and the history keeps both machines' moves. And a workflow run reads what
the other machine pushed before it acts (``repair.refresh``): a stale clone does not start an
investigation of a case the other machine already closed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_cli.services.git import Git
from tests.investigation.conftest import CASE, Investigation


class Machines:
    def __init__(self, inv: Investigation, monkeypatch: pytest.MonkeyPatch, tmp: Path) -> None:
        self.inv, self.mp, self.tmp = inv, monkeypatch, tmp
        self.bare = tmp / "workspace-remote.git"
        self.bare.mkdir()
        Git(self.bare).run("init", "-q", "--bare", "--initial-branch=main")

    def on(self, name: str) -> None:
        self.mp.setenv("HARNESS_HOME", str(self.tmp / f"home-{name}"))
        self.mp.setenv("HARNESS_WORKSPACE", str(self.tmp / f"workspace-{name}"))

    def init(self, name: str) -> None:
        self.on(name)
        code, _, err = self.inv.cli("init", "--remote", f"file://{self.bare}")
        assert code == 0, err

    def remote_case(self) -> dict[str, Any]:
        text = Git(self.bare).run("show", f"main:case-workspaces/{CASE}/case.json")
        data: dict[str, Any] = json.loads(text)
        return data


@pytest.fixture
def machines(
    inv: Investigation, slack_emu: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Machines:
    m = Machines(inv, monkeypatch, tmp_path)
    m.init("a")
    inv.script("inv_honest")
    ticket = tmp_path / "ticket.txt"
    ticket.write_text("Bulk discount is not applied to orders of exactly 10 units.\n")
    code, _, err = inv.cli(
        "case", "new", "--project", "team-a", "--id", CASE, "--title", "bulk discount",
        "--text", str(ticket),
    )  # fmt: skip
    assert code == 0, err
    m.init("b")  # a clone: B knows the case as A pushed it
    return m


@pytest.mark.parametrize("order", ["close-first", "investigation-first"])
def test_a_close_on_one_machine_survives_a_stale_investigation_on_the_other(
    machines: Machines, order: str
) -> None:
    inv = machines.inv
    if order == "close-first":
        machines.on("a")
        assert inv.cli("case", "close", CASE, "--reason", "duplicate")[0] == 0
        machines.on("b")  # stale: still `new` in its clone until the run reads the remote
        asked = len(inv.requests())
        code, out, err = inv.cli("investigate", CASE, "--json")
        # the run reads what A pushed before it acts: it refuses at once and asks no model
        # (before gitsync.pull was wired in, it investigated and only its sync was refused)
        assert code == 4, (code, out, err)
        assert f"case {CASE} is closed" in err, err
        assert len(inv.requests()) == asked
    else:
        machines.on("b")
        code, out, err = inv.cli("investigate", CASE, "--json")
        assert code == 0, err
        machines.on("a")  # stale: still `new` here
        code, _, err = inv.cli("case", "close", CASE, "--reason", "duplicate")
        assert code == 0, err
    remote = machines.remote_case()
    assert remote["status"] == "closed", [(h["from"], h["to"]) for h in remote["history"]]
    moves = [(h["from"], h["to"], h.get("by")) for h in remote["history"]]
    assert any(to == "closed" and by == "operator" for _, to, by in moves), moves
    if order == "investigation-first":  # both machines' moves kept
        assert any(to == "investigating" for _, to, _ in moves), moves


def test_two_non_terminal_changes_keep_both_in_the_history_and_take_the_later(
    machines: Machines,
) -> None:
    inv = machines.inv
    machines.on("b")
    assert inv.cli("investigate", CASE, "--json")[0] == 0
    machines.on("a")  # stale: still `new` here; its investigation starts later
    inv.script("inv_honest")
    code, _, err = inv.cli("investigate", CASE, "--json")
    assert code == 0, err
    remote = machines.remote_case()
    starts = [h for h in remote["history"] if h["to"] == "investigating"]
    assert len(starts) == 2 and remote["status"] == "awaiting_approval", remote["history"]
    assert not any(h.get("refused") for h in remote["history"]), remote["history"]
    ats = [h["at"] for h in remote["history"]]
    assert ats == sorted(ats)
