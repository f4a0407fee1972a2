"""Start-up cost of the CLI, beside a bare two-command typer app and `python -c pass`, measured
in the same run. Goal ([foundation]): `harness --help` within 1.2x the bare typer app;
`harness case list --json` with 10,000 cases under 1 s."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = int(os.environ.get("BENCH_RUNS", "15"))

BARE_TYPER = """
import typer
app = typer.Typer()
@app.command()
def one(): pass
@app.command()
def two(): pass
app()
"""


def median_wall(argv: list[str], env: dict[str, str]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def seed_cases(root: Path, count: int) -> None:
    """The harness's records (``control/``), the case folders beside them."""
    for i in range(count):
        (root / "case-workspaces" / f"AAA-{i + 1}").mkdir(parents=True)
        d = root / "control" / f"AAA-{i + 1}"
        d.mkdir(parents=True)
        (d / "case.json").write_text(
            json.dumps(
                {
                    "schema_version": 1,
                    "id": f"AAA-{i + 1}",
                    "project": "team-a",
                    "kind": "oncall",
                    "title": f"ticket {i}",
                    "status": "new",
                    "created_at": f"2026-11-01T00:00:{i % 60:02d}Z",
                    "updated_at": "2026-11-01T00:00:00Z",
                    "history": [],
                    "mrs": [],
                    "confidence": [],
                }
            )
        )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        bare = tmpdir / "bare_typer.py"
        bare.write_text(BARE_TYPER)
        env = {
            **os.environ,
            "HARNESS_HOME": str(tmpdir / "home"),
            "HARNESS_WORKSPACE": str(tmpdir / "ws"),
            "HARNESS_CONFIG": str(tmpdir / "cfg"),
        }
        py = sys.executable
        figures = {
            "python -c pass": median_wall([py, "-c", "pass"], env),
            "bare typer --help": median_wall([py, str(bare), "--help"], env),
            "harness --help": median_wall([py, "-m", "harness_cli", "--help"], env),
            "harness case list --json (empty)": median_wall(
                [py, "-m", "harness_cli", "case", "list", "--json"], env
            ),
        }
        seed_cases(tmpdir / "ws", 10_000)
        figures["harness case list --json (10,000 cases)"] = median_wall(
            [py, "-m", "harness_cli", "case", "list", "--json"], env
        )
    base = figures["bare typer --help"]
    print(f"median wall over {RUNS} runs")
    for name, value in figures.items():
        print(f"  {name:<42} {value * 1000:7.1f} ms   {value / base:5.2f}x bare typer")
    ratio = figures["harness --help"] / base
    print(f"harness --help / bare typer --help = {ratio:.2f} (goal <= 1.20)")
    print(
        f"case list with 10,000 cases = {figures['harness case list --json (10,000 cases)']:.2f} s"
        " (goal < 1 s)"
    )


if __name__ == "__main__":
    main()
