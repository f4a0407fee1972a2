"""Git output an agent controls is never held whole (#28 R10): the diff, log and listing of
what an agent committed are as large as it made them. On real repositories: the check-file
diff the operator is shown, and the one cap every other git call has (``OUTPUT_LIMIT``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness_cli.errors import ServiceError
from harness_cli.services import git as git_module
from harness_cli.services.git import Git

DESCRIBE_RSS = """
import sys
from pathlib import Path
from harness_cli.delivery import check_guard
text = check_guard.describe(Path(sys.argv[1]), sys.argv[2], ["pytest.ini"])
print(repr(text[:300]))
print(len(text))
# VmHWM, not ru_maxrss: that one keeps the forking parent's peak across exec
hwm = [ln for ln in Path('/proc/self/status').read_text().splitlines() if ln.startswith('VmHWM')]
print(int(hwm[0].split()[1]) // 1024)
"""


def _repo(tmp_path: Path) -> tuple[Git, str]:
    git = Git(tmp_path / "work")
    git.init("main")
    (git.repo_dir / "pytest.ini").write_text("[pytest]\naddopts = -q\n")
    git.add()
    git.commit("Start")
    return git, git.run("rev-parse", "HEAD")


@pytest.mark.slow
def test_a_huge_check_file_change_is_described_in_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent rewrites pytest.ini with 200 MB of lines: the operator's message still says
    what changed (the stat, the first lines), and the harness process holds a fraction of it
    — before, both diffs were read whole, then split into lines."""
    monkeypatch.setenv("HARNESS_HOME", str(tmp_path / "home"))
    git, base = _repo(tmp_path)
    with (git.repo_dir / "pytest.ini").open("wb") as out:
        out.write(b"[pytest]\naddopts = --collect-only\n")
        padding = b"# padding padding padding padding padding padding padding pad\n" * 16_384
        for _ in range(200):
            out.write(padding)  # 1 MB
    git.add()
    git.run("commit", "-q", "-m", "Tune the test runner")
    proc = subprocess.run(
        [sys.executable, "-c", DESCRIBE_RSS, str(git.repo_dir), base],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "HARNESS_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    shown, size, peak_mb = proc.stdout.splitlines()[-3:]
    assert "pytest.ini" in shown and "--collect-only" in shown, shown
    assert int(size) < 20_000
    assert int(peak_mb) < 150, f"peak {peak_mb} MB describing a 200 MB change"


def test_a_git_command_that_prints_too_much_fails_instead_of_growing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every other git call holds at most OUTPUT_LIMIT of stdout (here 1 MB): past it, one
    clear error, not an unbounded read."""
    monkeypatch.setattr(git_module, "OUTPUT_LIMIT", 1 << 20)
    git, _ = _repo(tmp_path)
    (git.repo_dir / "data.bin").write_bytes(b"\0" * (3 << 20))
    git.add()
    git.run("commit", "-q", "-m", "Add data")
    assert len(git.run_bytes("cat-file", "blob", "HEAD~1:pytest.ini")) > 0
    with pytest.raises(ServiceError, match=r"git cat-file printed more than 1 MB .*too much"):
        git.run_bytes("cat-file", "blob", "HEAD:data.bin")
    with pytest.raises(ServiceError, match="printed more than"):
        git.show("HEAD:data.bin")  # check=False callers too
