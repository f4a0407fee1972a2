"""What the hardened git costs (#28 R1): ``git status --porcelain`` through ``services.git.Git``
(allowlisted environment, neutral ``-c`` flags; in a linked worktree also the check of its
``.git`` file and config before each command) beside the same command run the old way (the
whole environment, no flags, git following the ``.git`` file itself), in the same run.

Two places: the workspace (a plain repository: gitsync's hot path, every cron minute) and a
case worktree made by ``worktrees.create``. Goal: the workspace within 1.1x, the worktree within
1.25x of the unhardened call.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from harness_cli.delivery import worktrees
from harness_cli.delivery.thresholds import DeliveryThresholds
from harness_cli.services.git import Git

RUNS = int(os.environ.get("BENCH_RUNS", "200"))
FILES = int(os.environ.get("BENCH_FILES", "2000"))


def sh(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def seed(root: Path) -> tuple[Path, Path]:
    """A plain repository of FILES files, pushed to a bare origin, and a case worktree of it."""
    os.environ.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(root / "gitconfig"))
    (root / "gitconfig").write_text("[user]\n\tname = Bench\n\temail = bench@example.invalid\n")
    os.environ["HARNESS_HOME"] = str(root / "home")
    repo = root / "workspace"
    sh(root, "init", "-q", "-b", "main", str(repo))
    for i in range(FILES):
        folder = repo / f"case-{i // 50:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.json").write_text(f'{{"n": {i}}}\n')
    sh(repo, "add", "-A")
    sh(repo, "commit", "-q", "-m", "seed")
    origin = root / "origin.git"
    sh(root, "init", "-q", "--bare", "-b", "main", str(origin))
    sh(repo, "push", "-q", str(origin), "main")
    th = DeliveryThresholds(worktree_root=str(root / "worktrees"))
    wt = worktrees.create("B-1", origin.as_uri(), "bench/app", "main", thresholds=th)
    return repo, wt.path


def medians(first: object, second: object) -> tuple[float, float]:
    """Both calls' medians, interleaved run by run (a busy machine slows both alike)."""
    assert callable(first) and callable(second)
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(RUNS):
        for fn, into in ((first, times[0]), (second, times[1])):
            start = time.perf_counter()
            fn()
            into.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def raw_status(where: Path) -> None:
    subprocess.run(
        ["git", "--no-optional-locks", "status", "--porcelain"],
        cwd=where, env=dict(os.environ), capture_output=True, check=True,
    )  # fmt: skip


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo, wt = seed(Path(tmp))
        rows = []
        for name, where, hardened in (
            ("workspace (gitsync)", repo, Git(repo)),
            ("case worktree", wt, worktrees.git_for(wt)),
        ):
            raw_status(where)
            hardened.status_porcelain()
            before, after = medians(
                lambda where=where: raw_status(where), hardened.status_porcelain
            )
            rows.append((name, before, after))
    print(f"git status --porcelain, median of {RUNS} runs, {FILES} files")
    for name, before, after in rows:
        print(
            f"  {name:<22} unhardened {before * 1000:6.2f} ms   hardened {after * 1000:6.2f} ms"
            f"   ratio {after / before:.2f}x"
        )


if __name__ == "__main__":
    main()
