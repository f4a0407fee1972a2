"""One installed wheel per test session (per xdist worker): building and installing it costs
~10 s, so the install tests share it, each with its own HARNESS_HOME, login home and sandbox.
``Operator`` runs that installed ``harness`` the way a new operator's shell does: from an empty
directory, with no checkout on PATH and only the variables the test gives it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness_cli.sandbox.runner import SANDBOX_TOKENS, Sandbox
from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_PROJECT_PATH
from tests.install.wheel_env import Installed, build_and_install, clean_env

INIT_FLAGS = (
    *("--slack-user", "U0OPERATOR", "--self-dm", "D0SELF", "--channel", "C0SUPPORT"),
    *("--jira-prefix", "AAA", "--repo", SAMPLE_PROJECT_PATH),
)


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return build_and_install(tmp_path_factory.mktemp("wheel"), borrow_dependencies=True)


@dataclass
class Operator:
    """The installed harness, run from an empty directory with a login home of its own (no git
    identity, no crontab unless the test gives one) and the sandbox's service URLs."""

    installed: Installed
    root: Path
    box: Sandbox | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.root / "harness-home"

    @property
    def login(self) -> Path:
        return self.root / "login"

    @property
    def config(self) -> Path:
        return self.home / "agent-config"

    @property
    def env_file(self) -> Path:
        return self.home / "env"

    def base_env(self) -> dict[str, str]:
        urls = {k: v for k, v in (self.box.env() if self.box else {}).items()}
        urls = {k: v for k, v in urls.items() if k not in SANDBOX_TOKENS}
        return clean_env(
            HARNESS_HOME=str(self.home),
            HOME=str(self.login),
            XDG_CONFIG_HOME=str(self.login / ".config"),
            GIT_CONFIG_NOSYSTEM="1",  # the machine's /etc/gitconfig identity is not the user's
            **urls,
            **self.env,
        )

    def run(self, *args: str, **extra: str) -> tuple[int, str, str]:
        cwd = self.root / "empty"
        cwd.mkdir(parents=True, exist_ok=True)
        self.login.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [str(self.installed.harness), *args],
            cwd=cwd,
            env={**self.base_env(), **extra},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        return proc.returncode, proc.stdout, proc.stderr

    def init(self, *flags: str) -> None:
        code, _, err = self.run("init", *(flags or INIT_FLAGS))
        assert code == 0, err

    def fill_tokens(self) -> None:
        """What the operator does after init: the tokens into the env file."""
        text = self.env_file.read_text()
        for key, value in SANDBOX_TOKENS.items():
            if f"\n{key}=\n" in text:
                text = text.replace(f"\n{key}=\n", f"\n{key}={value}\n")
            else:
                text += f"{key}={value}\n"
        self.env_file.write_text(text)

    def doctor(self, *flags: str, **extra: str) -> tuple[int, dict[str, dict[str, Any]]]:
        code, out, err = self.run("doctor", "--json", *flags, **extra)
        assert out, err
        return code, {c["name"]: c for c in json.loads(out)["data"]}


@pytest.fixture
def operator(installed_wheel: Installed, tmp_path: Path) -> Iterator[Operator]:
    with Sandbox(tmp_path / "sandbox") as box:
        yield Operator(installed_wheel, tmp_path, box)
