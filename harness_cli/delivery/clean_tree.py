"""The tree the required checks run in: exactly what the change would commit, nothing else.

Run in the worktree itself, the checks saw whatever the agent left there: a ``pytest.py`` that
shadows the runner hidden from git by ``info/exclude`` (the MR showed no trace of it), an
ignored ``.pytest.ini``, a ``.venv`` of its making (#28 R6). And code of the agent running in
the worktree could plant a symlink the harness later wrote through (R2). So acceptance checks
out the snapshot — ``HEAD``, the worktree's changes and its new files that git does not ignore,
staged in a private index — into a fresh folder, and runs the checks there (in the box, that
folder is mounted at the worktree's path, so what they print names the worktree's files). What
they change there is thrown away; the worktree is never theirs to write.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from harness_cli.delivery.worktrees import git_for


@contextmanager
def checkout(worktree: Path, into: Path, *, excluded: Sequence[str] = ()) -> Iterator[Path]:
    """``into/tree``: the worktree's snapshot as files, removed afterwards. ``excluded``:
    worktree-relative folders left out (the case folder, when it lies inside)."""
    git = git_for(worktree)
    tree = into / "tree"
    tree.mkdir()
    index = into / "index"
    real_index = git.git_path("index")
    if real_index.is_file():  # its stat cache: only what changed is read again
        shutil.copyfile(real_index, index)
    env = {"GIT_INDEX_FILE": str(index)}
    specs = [".", *(f":(exclude){e}" for e in excluded)]
    try:
        if not real_index.is_file():
            git.run("read-tree", "HEAD", env=env)
        git.run("add", "-A", "--", *specs, env=env)
        git.run("checkout-index", "-a", "-f", f"--prefix={tree}/", env=env)
        yield tree
    finally:
        shutil.rmtree(tree, ignore_errors=True)
        index.unlink(missing_ok=True)
