"""The install story, timed: `pip install` of the wheel into a fresh virtualenv → a finished
`harness demo`; then `harness --help` of that installed wheel beside a bare two-command typer
app in the same virtualenv (goal: ≤ 1.0×), measured pair by pair with farm-bench."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.install.wheel_env import build_and_install, clean_env  # noqa: E402

BARE_TYPER = """import typer
app = typer.Typer()
@app.command()
def one(): pass
@app.command()
def two(): pass
app()
"""


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-install-") as tmp:
        root = Path(tmp)
        started = time.monotonic()
        installed = build_and_install(root / "pip")
        empty = root / "empty"
        empty.mkdir()
        env = clean_env(HOME=str(root / "login"), HARNESS_HOME=str(root / "home"))
        demo_started = time.monotonic()
        proc = subprocess.run(
            [str(installed.harness), "demo", "--json"],
            cwd=empty,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        finished = time.monotonic()
        if proc.returncode != 0:
            sys.exit(f"demo failed ({proc.returncode}): {proc.stderr[-2000:]}")
        report = json.loads(proc.stdout)["data"]
        print(f"wheel build              {installed.build_seconds:6.1f} s")
        print(f"pip install (fresh venv) {installed.install_seconds:6.1f} s")
        runtime, steps = report["summary"]["runtime"], len(report["steps"])
        print(
            f"harness demo             {finished - demo_started:6.1f} s ({runtime}, {steps} steps)"
        )
        print(f"pip install → demo done  {finished - started:6.1f} s (build included)")
        bare = root / "bare_typer.py"
        bare.write_text(BARE_TYPER)
        bench = shutil.which("farm-bench")
        if bench is None:
            print("farm-bench not on PATH: --help start-up ratio not measured")
            return
        print("\n`harness --help` (installed wheel) vs a bare two-command typer app:")
        baseline = f"{installed.python} {bare} --help"
        argv = [bench, "-n", "15", "--warmup", "2", "--timeout", "300", "--vs", baseline]
        subprocess.run(
            [*argv, "--", str(installed.harness), "--help"],
            env=env,
            check=True,
        )


if __name__ == "__main__":
    main()
