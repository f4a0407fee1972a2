"""Machines for the sessions tests: separate HARNESS_HOMEs, each with a clone of one bare
workspace remote (real git), and the CLI run in-process or as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness_cli.services.git import Git


@dataclass
class Machine:
    name: str
    home: Path
    workspace: Path
    env: dict[str, str]

    def run(
        self,
        *args: str,
        now: str | None = None,
        stdin: str | None = None,
        extra: dict[str, str] | None = None,
    ) -> tuple[int, str, str]:
        env = {**os.environ, **self.env, **(extra or {})}
        if now:
            env["HARNESS_NOW"] = now
        proc = subprocess.run(
            [sys.executable, "-m", "harness_cli", *args],
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return proc.returncode, proc.stdout, proc.stderr

    def popen(self, *args: str, now: str | None = None) -> subprocess.Popen[str]:
        env = {**os.environ, **self.env, **({"HARNESS_NOW": now} if now else {})}
        return subprocess.Popen(
            [sys.executable, "-m", "harness_cli", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def json(self, *args: str, now: str | None = None) -> dict[str, Any]:
        code, out, err = self.run(*args, "--json", now=now)
        assert code == 0, f"{args} exited {code}: {err}{out}"
        data: dict[str, Any] = json.loads(out)["data"]
        return data


def call(
    cli,
    monkeypatch: pytest.MonkeyPatch,
    machine: Machine,
    *args: str,  # type: ignore[no-untyped-def]
    now: str | None = None,
) -> tuple[int, str, str]:
    """``harness ARGS`` in-process as ``machine`` (no process start)."""
    with monkeypatch.context() as scoped:
        for key, value in {**machine.env, **({"HARNESS_NOW": now} if now else {})}.items():
            scoped.setenv(key, value)
        result: tuple[int, str, str] = cli(*args)
    return result


def here(
    cli,
    monkeypatch: pytest.MonkeyPatch,
    machine: Machine,
    *args: str,  # type: ignore[no-untyped-def]
    now: str | None = None,
) -> dict[str, Any]:
    """``harness ARGS --json`` in-process as ``machine``: its data."""
    code, out, err = call(cli, monkeypatch, machine, *args, "--json", now=now)
    assert code == 0, f"{args} exited {code}: {err}{out}"
    data: dict[str, Any] = json.loads(out)["data"]
    return data


@pytest.fixture
def remote(tmp_path: Path) -> str:
    bare = tmp_path / "workspace-remote.git"
    bare.mkdir()
    Git(bare).run("init", "-q", "--bare", "--initial-branch=main")
    return f"file://{bare}"


@pytest.fixture
def machines(tmp_path: Path, remote: str, config_dir: Path, cli, monkeypatch):  # type: ignore[no-untyped-def]
    """machines(n) → n machines, each `harness init --remote` on the shared remote (in-process:
    a process start costs a second on a shared machine; the racers are real processes)."""

    def make(n: int) -> list[Machine]:
        made = []
        for i in range(n):
            name = "abc"[i]
            home = tmp_path / f"home-{name}"
            env = {
                "HARNESS_HOME": str(home),
                "HARNESS_WORKSPACE": str(tmp_path / f"ws-{name}"),
                "HARNESS_CONFIG": str(config_dir),
                "HARNESS_USER": f"user-{name}",
            }
            m = Machine(name, home, tmp_path / f"ws-{name}", env)
            with monkeypatch.context() as scoped:
                for key, value in env.items():
                    scoped.setenv(key, value)
                code, out, err = cli("init", "--remote", remote)
            assert code == 0, err + out
            made.append(m)
        return made

    return make
