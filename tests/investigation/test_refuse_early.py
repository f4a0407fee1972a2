"""What can refuse an investigation refuses before anything changes (#34 item 5): a case that
is awaiting approval stays exactly as it was — its status, its iterations and review, the
workspace's commits — when `harness investigate` is run without the model's credentials."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.investigation.conftest import CASE, TICKET, Investigation


def _snapshot(workspace: Path) -> dict[str, str]:
    """Every file of the workspace (its bytes' digest) and its git HEAD and status."""
    found = {
        str(p.relative_to(workspace)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(workspace.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(workspace).parts
    }
    for args in (["rev-parse", "HEAD"], ["status", "--porcelain"]):
        done = subprocess.run(
            ["git", "-C", str(workspace), *args], capture_output=True, text=True, check=True
        )
        found[" ".join(args)] = done.stdout
    return found


@pytest.mark.parametrize("key", ["ANTHROPIC_API_KEY"])
def test_investigate_without_credentials_refuses_before_touching_the_case(
    inv: Investigation, slack_emu: Any, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    inv.script("inv_honest")
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"{TICKET} ({CASE})")
    assert inv.cli("poll-slack")[0] == 0
    inv.investigate(post=True)
    assert inv.case_json()["status"] == "awaiting_approval"
    workspace = inv.root / "workspace"
    before = _snapshot(workspace)
    posts = slack_emu.calls("chat.postMessage")
    monkeypatch.delenv(key)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)

    code, _, err = inv.cli("investigate", CASE)

    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and key in err, err
    assert _snapshot(workspace) == before
    assert slack_emu.calls("chat.postMessage") == posts


def test_investigate_a_case_that_does_not_exist_writes_and_pushes_nothing(
    inv: Investigation, slack_emu: Any
) -> None:
    """#34 item 15: no outcome report, no session, no commit for a case nobody opened."""
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"{TICKET} ({CASE})")
    assert inv.cli("poll-slack")[0] == 0
    workspace = inv.root / "workspace"
    before = _snapshot(workspace)

    code, _, err = inv.cli("investigate", "AAA-999")

    assert code == 2 and "no case 'AAA-999'" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert _snapshot(workspace) == before
