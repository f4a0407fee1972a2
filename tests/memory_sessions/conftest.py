"""Two machines sharing one claude session through the git session store (L3: real git).

A bare repository in tmp_path is the private remote; each "machine" has its own clone,
HARNESS_HOME, HOME (so its own ``~/.claude``) and machine name.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from harness_cli.memory.resume.model import HookInput, SessionEnv, SessionSyncSettings
from harness_cli.memory.resume.sync import PromptSync, sync_prompt

REPO = Path(__file__).resolve().parents[2]
SESSION = "0b5c1a8e-3f0e-4d7a-9c52-6f1f2b8d4e11"
CWD = "/srv/work/billing_api"

FAST = SessionSyncSettings(throttle_seconds=0)
"""No throttle: the alternation tests sync on every prompt."""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def record(text: str, role: str = "user", session: str = SESSION) -> bytes:
    """One transcript record in the CLI's shape."""
    obj: dict[str, Any] = {
        "parentUuid": None,
        "type": role,
        "uuid": str(uuid.uuid4()),
        "sessionId": session,
        "cwd": CWD,
        "timestamp": "2026-11-29T10:00:00.000Z",
        "message": {"role": role, "content": [{"type": "text", "text": text}]},
    }
    return (json.dumps(obj) + "\n").encode()


def injected(context: str) -> list[str]:
    """The message texts an injected delta carries, in order."""
    return [line.split("] ", 1)[1] for line in context.splitlines() if line.startswith("[")]


class Machine:
    """One machine: its clone of the store, its state, its ``~/.claude``."""

    def __init__(self, root: Path, name: str, remote: Path) -> None:
        self.root = root
        self.name = name
        self.remote = remote
        self.harness_home = root / "harness-home"
        self.home = root / "home"
        self.env = SessionEnv(
            repo=self.harness_home / "sessions-repo",
            remote=str(remote),
            machine=name,
            state_dir=self.harness_home / "session-sync",
            lock_dir=self.harness_home / "locks" / "session-sync",
            claude_home=self.home / ".claude",
        )

    def transcript(self, session: str = SESSION, cwd: str = CWD) -> Path:
        return self.env.transcript_path(session, cwd)

    def say(self, *texts: str, session: str = SESSION, cwd: str = CWD) -> list[str]:
        """Append one record per text to this machine's local transcript (what claude does)."""
        path = self.transcript(session, cwd)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab") as handle:
            for i, text in enumerate(texts):
                handle.write(record(text, "user" if i % 2 == 0 else "assistant", session))
        return list(texts)

    def hook(self, session: str = SESSION, cwd: str = CWD) -> HookInput:
        return HookInput(
            session_id=session,
            cwd=cwd,
            transcript_path=str(self.transcript(session, cwd)),
            hook_event_name="UserPromptSubmit",
            prompt="next",
        )

    def sync(
        self, settings: SessionSyncSettings = FAST, session: str = SESSION, cwd: str = CWD
    ) -> PromptSync:
        return sync_prompt(self.hook(session, cwd), self.env, settings)

    def vars(self) -> dict[str, str]:
        """The environment a hook subprocess on this machine runs with."""
        return {
            "HARNESS_HOME": str(self.harness_home),
            "HOME": str(self.home),
            "HARNESS_SESSIONS_REMOTE": str(self.remote),
            "HARNESS_MACHINE": self.name,
            "HARNESS_BIN": str(REPO / ".venv" / "bin" / "harness"),
            "PATH": f"{REPO / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        }


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    path = tmp_path / "sessions.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return path


@pytest.fixture
def laptop(tmp_path: Path, remote: Path) -> Machine:
    return Machine(tmp_path / "laptop", "laptop", remote)


@pytest.fixture
def vm(tmp_path: Path, remote: Path) -> Machine:
    return Machine(tmp_path / "vm", "vm", remote)
