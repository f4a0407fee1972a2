"""Where the config comes from (CONTRACT §2, issue #16): the install's own config wins over the
current directory; ``./agent-config`` is a loud fallback for a machine with no install."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from harness_cli import paths
from tests.conftest import REPO


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory with the example ``agent-config/`` in it, as the cwd, HARNESS_CONFIG unset."""
    here = tmp_path / "checkout"
    shutil.copytree(REPO / "agent-config", here / "agent-config")
    monkeypatch.chdir(here)
    monkeypatch.delenv("HARNESS_CONFIG")
    paths._warned_local.clear()
    return here


def test_the_installs_config_wins_over_the_current_directory(checkout: Path) -> None:
    installed = paths.home() / "agent-config"
    installed.mkdir(parents=True)
    assert paths.config_dir() == installed
    assert paths.stray_config() == (checkout / "agent-config").absolute()


def test_without_an_install_the_current_directory_is_used_and_said(
    checkout: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="harness.config"):
        assert paths.config_dir() == checkout / "agent-config"
        paths.config_dir()
    said = [r.getMessage() for r in caplog.records if "current directory" in r.getMessage()]
    assert len(said) == 1 and "harness init" in said[0]
    # init never writes into the current directory's example
    assert paths.install_config_dir() == paths.home() / "agent-config"


def test_harness_config_always_wins(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_CONFIG", str(checkout / "elsewhere"))
    assert paths.config_dir() == checkout / "elsewhere"
    assert paths.install_config_dir() == checkout / "elsewhere"
