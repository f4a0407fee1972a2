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


def build_and_install(root: Path, *, borrow_dependencies: bool = False) -> Installed:
    """``borrow_dependencies``: install the wheel alone (``--no-deps``) and let the new venv
    see this interpreter's site-packages after its own (a ``.pth`` line), then ``pip check``
    that every dependency the wheel declares is met. The wheel's own files are still the only
    harness the venv imports; it saves the ~30 s of installing numpy, scipy, sklearn… again.
    The benchmark installs everything for real."""
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
    if borrow_dependencies:  # this interpreter's pip installs into it: no ensurepip to wait for
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
    else:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        pip = [str(venv / "bin" / "python"), "-m", "pip"]
    extra = ["--no-deps"] if borrow_dependencies else []
    subprocess.run(
        [*pip, "install", "-q", "--no-compile", *extra, str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    if borrow_dependencies:
        import sysconfig

        where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        own = subprocess.run(
            [str(venv / "bin" / "python"), "-c", where], capture_output=True, text=True, check=True
        ).stdout.strip()
        Path(own, "_borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        check = subprocess.run([*pip, "check"], capture_output=True, text=True, check=False)
        if check.returncode != 0 and "harness-cli" in check.stdout:
            raise AssertionError(f"the wheel's dependencies are not met: {check.stdout}")
    return Installed(venv, wheel, built - started, time.monotonic() - built)
