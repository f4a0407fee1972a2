"""Build the harness wheel and install it in a fresh virtualenv, as an operator's
``pip install`` would (the machine's package index serves the dependencies). Shared by the
wheel test and ``bench/bench_install.py``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Installed:
    venv: Path
    wheel: Path
    build_seconds: float
    install_seconds: float

    @property
    def harness(self) -> Path:
        return self.venv / "bin" / "harness"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of an operator's shell: no HARNESS_*, no service URL or token, no
    checkout on PATH (the claude CLI is found only if the machine has one)."""
    keep = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG", "LC_ALL", "TMPDIR")}
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if str(REPO) not in p]
    return {**keep, "PATH": os.pathsep.join(path), **extra}


def build_and_install(root: Path) -> Installed:
    started = time.monotonic()
    dist = root / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(REPO)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = dist.glob("harness_cli-*.whl")
    built = time.monotonic()
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--no-compile", str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return Installed(venv, wheel, built - started, time.monotonic() - built)
