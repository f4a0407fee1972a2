"""A run's private scratch folder (#22): with a stable name it is the same path each time (the
claude CLI prints it into its Bash tool's definition, part of the prompt prefix), never shared
by two runs at once, never in a place another user can enter, and emptied of a killed run's
leftovers. Without one, a fresh folder each time."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from harness_cli.agents import sandbox
from harness_cli.agents.policy import BUILTIN_TOOLS
from harness_cli.agents.tools import TOOLS


@pytest.fixture(autouse=True)
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_a_stable_name_gives_the_same_private_folder_each_time(tmp: Path) -> None:
    with sandbox.scratch("abc123") as first:
        (first / "home" / "left.txt").write_text("x")
        assert (first / "home").is_dir()
    assert not first.exists()  # removed afterwards
    with sandbox.scratch("abc123") as again:
        assert again == first and not (again / "home" / "left.txt").exists()
    parent = tmp / f"harness-agent-{os.getuid()}"
    assert first.parent == parent and parent.stat().st_mode & 0o777 == 0o700
    with sandbox.scratch() as fresh, sandbox.scratch() as other:
        assert fresh != other and fresh.parent == tmp


def test_a_held_name_falls_back_to_a_fresh_folder(tmp: Path) -> None:
    with sandbox.scratch("same") as first, sandbox.scratch("same") as second:
        assert first != second and first.is_dir() and second.is_dir()
        assert second.parent == tmp  # a random one, not the other run's
    assert not first.exists() and not second.exists()


def test_a_killed_runs_leftovers_are_cleared(tmp: Path) -> None:
    parent = tmp / f"harness-agent-{os.getuid()}"
    (parent / "dead" / "home").mkdir(parents=True, mode=0o700)
    parent.chmod(0o700)
    (parent / "dead" / "key").write_text("stale")
    with sandbox.scratch("dead") as folder:
        assert folder == parent / "dead" and not (folder / "key").exists()


def test_a_parent_others_may_enter_is_not_used(tmp: Path) -> None:
    parent = tmp / f"harness-agent-{os.getuid()}"
    parent.mkdir(mode=0o755)
    parent.chmod(0o755)
    with sandbox.scratch("abc") as folder:
        assert folder.parent == tmp and not (parent / "abc").exists()


def test_the_built_in_tools_are_the_harness_loops_own() -> None:
    """What the claude CLI is offered (``--tools``) is what the harness's own loop implements."""
    assert set(BUILTIN_TOOLS) == set(TOOLS)
