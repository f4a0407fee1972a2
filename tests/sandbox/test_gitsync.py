"""Git-synced case workspaces on real git: a bare repo in tmp_path is the remote, each
"machine" is a clone with its own lock dir, and machines race in threads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness_cli.errors import ConfigError, LockHeld, ServiceError
from harness_cli.workspace.gitsync import SyncResult, ensure_repo, pull, sync

CASE = "case-workspaces"


@pytest.fixture(autouse=True)
def _pinned_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Isolate git from the machine's config and pin the identity."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "sync.gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Test Machine")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "test@example.invalid")


def sh(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    path = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return path


class Machine:
    """One clone of the workspace repo, as a laptop or a VM would hold it."""

    def __init__(self, root: Path, remote: Path | None) -> None:
        self.ws = root / "workspace"
        self.lock_dir = root / "state"
        self.result = ensure_repo(self.ws, str(remote) if remote else None, lock_dir=self.lock_dir)

    def write(self, rel: str, text: str) -> Path:
        path = self.ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def sync(self, message: str, **kwargs: object) -> SyncResult:
        return sync(self.ws, message, lock_dir=self.lock_dir, **kwargs)  # type: ignore[arg-type]


def remote_subjects(remote: Path) -> list[str]:
    return sh(remote, "log", "--format=%s", "main").splitlines()


def run_parallel(*jobs: Callable[[], None]) -> None:
    """Run jobs in threads; re-raise the first failure."""
    errors: list[BaseException] = []

    def guard(job: Callable[[], None]) -> None:
        try:
            job()
        except BaseException as exc:  # noqa: BLE001 — re-raised below, in the test thread
            errors.append(exc)

    threads = [threading.Thread(target=guard, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    if errors:
        raise errors[0]


# -- local-only ------------------------------------------------------------------------------


def test_local_only_workspace_commits_and_skips_when_unchanged(tmp_path: Path) -> None:
    m = Machine(tmp_path / "a", remote=None)
    assert m.result.action == "initialized"
    m.write(f"{CASE}/T-1/case.json", "{}")
    first = m.sync("T-1 created")
    assert first.committed and first.skipped == "no remote: local-only workspace"
    assert not first.pushed
    assert sh(m.ws, "log", "-1", "--format=%s") == "T-1 created"
    again = m.sync("T-1 nothing new")
    assert again.committed is None
    assert sh(m.ws, "rev-parse", "HEAD") == first.committed


def test_sync_limited_to_paths_leaves_other_changes_alone(tmp_path: Path) -> None:
    m = Machine(tmp_path / "a", remote=None)
    m.write(f"{CASE}/T-1/a.md", "a")
    m.write(f"{CASE}/T-2/b.md", "b")
    result = m.sync("T-1 only", paths=[m.ws / CASE / "T-1", m.ws / CASE / "T-9-gone"])
    assert result.committed
    assert sh(m.ws, "show", "--name-only", "--format=", "HEAD") == f"{CASE}/T-1/a.md"
    assert f"?? {CASE}/" in sh(m.ws, "status", "--porcelain")
    with pytest.raises(ConfigError):
        m.sync("outside", paths=[tmp_path / "elsewhere"])


def test_sync_of_a_non_repository_says_how_to_fix(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(ConfigError, match="not a git repository"):
        sync(tmp_path / "plain", "x", lock_dir=tmp_path / "state")


# -- ensure_repo -----------------------------------------------------------------------------


def test_ensure_repo_publishes_clones_and_adopts(tmp_path: Path, remote: Path) -> None:
    first = Machine(tmp_path / "a", remote)
    assert (first.result.action, first.result.pushed) == ("initialized", True)
    assert sh(remote, "rev-parse", "main") == first.result.head

    second = Machine(tmp_path / "b", remote)
    assert second.result.action == "cloned"
    assert second.result.head == first.result.head

    # A machine that already has case files but no repository keeps them on top of the remote.
    (tmp_path / "c" / "workspace" / CASE / "T-7").mkdir(parents=True)
    (tmp_path / "c" / "workspace" / CASE / "T-7" / "TASK.md").write_text("local work")
    third = Machine(tmp_path / "c", remote)
    assert (third.result.action, third.result.pushed) == ("adopted", True)
    assert sh(remote, "merge-base", "--is-ancestor", first.result.head or "", "main") == ""
    assert sh(remote, "show", f"main:{CASE}/T-7/TASK.md") == "local work"

    assert Machine(tmp_path / "a", remote).result.action == "existing"
    with pytest.raises(ConfigError, match="already pushes to"):
        ensure_repo(first.ws, str(tmp_path / "other.git"), lock_dir=first.lock_dir)


# -- two machines ----------------------------------------------------------------------------


def test_two_machines_on_different_cases_converge_without_losing_a_commit(
    tmp_path: Path, remote: Path
) -> None:
    a, b = Machine(tmp_path / "a", remote), Machine(tmp_path / "b", remote)
    rounds = 6
    barrier = threading.Barrier(2, timeout=10)

    def work(machine: Machine, name: str) -> None:
        log = f"{CASE}/T-{name}/transcript.md"
        for i in range(rounds):
            machine.write(log, "".join(f"{name} turn {n}\n" for n in range(i + 1)))
            barrier.wait()  # both push at the same moment, every round
            result = machine.sync(f"{name} round {i}", max_push_attempts=20)
            assert result.pushed and result.committed

    run_parallel(lambda: work(a, "A"), lambda: work(b, "B"))

    subjects = remote_subjects(remote)
    for name in "AB":
        for i in range(rounds):
            assert subjects.count(f"{name} round {i}") == 1, subjects
    for machine in (a, b):
        pull(machine.ws, machine.lock_dir)
        assert sh(machine.ws, "rev-parse", "HEAD") == sh(remote, "rev-parse", "main")
        assert sh(machine.ws, "status", "--porcelain") == ""
    for name in "AB":
        text = (a.ws / CASE / f"T-{name}" / "transcript.md").read_text()
        assert text == (b.ws / CASE / f"T-{name}" / "transcript.md").read_text()
        assert text.count("turn") == rounds


def test_two_machines_editing_the_same_case_file_keep_both_commits(
    tmp_path: Path, remote: Path
) -> None:
    a, b = Machine(tmp_path / "a", remote), Machine(tmp_path / "b", remote)
    case_json = f"{CASE}/X/case.json"
    a.write(case_json, '{"status": "new"}\n')
    a.sync("X created")
    pull(b.ws, b.lock_dir)

    barrier = threading.Barrier(2, timeout=10)
    results: dict[str, SyncResult] = {}

    def edit(machine: Machine, name: str) -> None:
        machine.write(case_json, f'{{"status": "{name}"}}\n')
        barrier.wait()
        results[name] = machine.sync(f"X edited on {name}")

    run_parallel(lambda: edit(a, "A"), lambda: edit(b, "B"))

    head = sh(remote, "rev-parse", "main")
    for result in results.values():
        assert result.pushed and result.committed
        sh(remote, "merge-base", "--is-ancestor", result.committed, head)  # no lost commit
    losers = [name for name, r in results.items() if r.attempts > 1]
    assert len(losers) == 1, results
    # A JSON file both changed is merged by meaning (workspace/case_merge.py), not by hunks:
    # no hunk was kept blindly; with no transition history to order them, the machine that
    # integrated keeps its local value.
    assert results[losers[0]].conflicts == []
    assert json.loads(sh(remote, "show", f"main:{case_json}")) == {"status": losers[0]}
    for machine in (a, b):
        pull(machine.ws, machine.lock_dir)
        assert sh(machine.ws, "rev-parse", "HEAD") == head


def test_two_machines_adding_files_to_the_same_case_keep_both(tmp_path: Path, remote: Path) -> None:
    a, b = Machine(tmp_path / "a", remote), Machine(tmp_path / "b", remote)
    barrier = threading.Barrier(2, timeout=10)

    def add(machine: Machine, name: str) -> None:
        machine.write(f"{CASE}/X/followup_transcript_{name}.md", name)
        barrier.wait()
        result = machine.sync(f"X followup {name}")
        assert result.pushed and result.conflicts == []

    run_parallel(lambda: add(a, "a"), lambda: add(b, "b"))
    files = sh(remote, "ls-tree", "-r", "--name-only", "main", f"{CASE}/X").splitlines()
    assert files == [f"{CASE}/X/followup_transcript_a.md", f"{CASE}/X/followup_transcript_b.md"]


def test_pull_brings_in_the_other_machine_and_keeps_uncommitted_files(
    tmp_path: Path, remote: Path
) -> None:
    a, b = Machine(tmp_path / "a", remote), Machine(tmp_path / "b", remote)
    a.write(f"{CASE}/T-3/TASK.md", "from A")
    a.sync("T-3 from A")
    b.write(f"{CASE}/T-4/draft.md", "uncommitted on B")
    result = pull(b.ws, b.lock_dir)
    assert result.updated and result.conflicts == []
    assert (b.ws / CASE / "T-3" / "TASK.md").read_text() == "from A"
    assert (b.ws / CASE / "T-4" / "draft.md").read_text() == "uncommitted on B"
    assert pull(b.ws, b.lock_dir).skipped == "already up to date"


# -- recovery --------------------------------------------------------------------------------


def test_stale_index_lock_is_removed_and_the_sync_succeeds(tmp_path: Path, remote: Path) -> None:
    m = Machine(tmp_path / "a", remote)
    stale = m.ws / ".git" / "index.lock"
    stale.write_text("")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    m.write(f"{CASE}/T-1/case.json", "{}")
    result = m.sync("after a crash", stale_lock_seconds=60)
    assert result.pushed and result.committed
    assert not stale.exists()


def test_fresh_index_lock_is_left_alone(tmp_path: Path) -> None:
    m = Machine(tmp_path / "a", remote=None)
    fresh = m.ws / ".git" / "index.lock"
    fresh.write_text("")
    m.write("x.md", "x")
    with pytest.raises(LockHeld, match=r"index\.lock"):
        m.sync("blocked", fresh_lock_wait=0.3)
    assert fresh.exists()

    # An outside git that finishes within the wait does not fail the sync.
    threading.Timer(0.2, fresh.unlink).start()
    assert m.sync("after the outside git", fresh_lock_wait=5).committed


def test_rebase_left_by_a_killed_run_is_aborted_at_the_next_sync(
    tmp_path: Path, remote: Path
) -> None:
    a, b = Machine(tmp_path / "a", remote), Machine(tmp_path / "b", remote)
    a.write("ANALYSIS.md", "A\n")  # text: a state file that does not parse is left out
    a.sync("A edit")
    b.write("ANALYSIS.md", "B\n")
    sh(b.ws, "add", "-A")
    sh(b.ws, "commit", "-qm", "B edit")
    local = sh(b.ws, "rev-parse", "HEAD")
    sh(b.ws, "fetch", "-q", "origin")
    rebase = subprocess.run(["git", "-C", str(b.ws), "rebase", "origin/main"], capture_output=True)
    assert rebase.returncode != 0 and (b.ws / ".git" / "rebase-merge").exists()

    result = b.sync("next run")
    assert not (b.ws / ".git" / "rebase-merge").exists()
    assert result.pushed and result.conflicts == ["ANALYSIS.md"]
    sh(remote, "merge-base", "--is-ancestor", local, "main")


def test_sync_killed_while_pushing_is_finished_by_the_next_run(
    tmp_path: Path, remote: Path
) -> None:
    m = Machine(tmp_path / "a", remote)
    entered = tmp_path / "hook-entered"
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ntouch '{entered}'\nsleep 30\n")
    hook.chmod(0o755)
    m.write("x.md", "x")
    code = (
        "import sys; from pathlib import Path; from harness_cli.workspace.gitsync import sync\n"
        "sync(Path(sys.argv[1]), 'killed', lock_dir=Path(sys.argv[2]))\n"
    )
    victim = subprocess.Popen(
        [sys.executable, "-c", code, str(m.ws), str(m.lock_dir)], start_new_session=True
    )
    try:
        deadline = time.monotonic() + 30
        while not entered.exists() and victim.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert entered.exists(), "the sync never reached the push"
    finally:
        os.killpg(victim.pid, signal.SIGKILL)  # the whole group: python, git, the hook
        victim.wait()
    assert "killed" not in remote_subjects(remote)

    hook.unlink()
    # The dead holder's workspace lock is gone with its process; the commit goes out now.
    result = m.sync("next run", lock_timeout=5)
    assert result.committed is None and result.pushed
    assert remote_subjects(remote)[0] == "killed"


def test_exhausted_push_budget_keeps_the_local_commit(tmp_path: Path, remote: Path) -> None:
    a, b = Machine(tmp_path / "a", remote), Machine(tmp_path / "b", remote)
    a.write("a.md", "a")
    a.sync("A first")
    b.write("b.md", "b")
    with pytest.raises(ServiceError, match="safe locally") as caught:
        b.sync("B waits", max_push_attempts=1)
    assert "rejected 1 times" in caught.value.message
    assert sh(b.ws, "log", "-1", "--format=%s") == "B waits"

    later = b.sync("B next run")  # nothing new to commit; the waiting commit goes out
    assert later.committed is None and later.pushed
    assert "B waits" in remote_subjects(remote)


def test_remote_refusing_every_push_raises_and_keeps_the_commit(
    tmp_path: Path, remote: Path
) -> None:
    m = Machine(tmp_path / "a", remote)
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'protected branch' >&2\nexit 1\n")
    hook.chmod(0o755)
    m.write("x.md", "x")
    with pytest.raises(ServiceError, match="safe locally") as caught:
        m.sync("refused")
    assert "protected branch" in caught.value.message
    assert sh(m.ws, "log", "-1", "--format=%s") == "refused"


def test_threads_syncing_one_clone_never_collide_on_index_lock(
    tmp_path: Path, remote: Path
) -> None:
    m = Machine(tmp_path / "a", remote)
    count = 8
    results: list[SyncResult] = []
    start = threading.Barrier(count, timeout=10)

    def one(i: int) -> None:
        path = m.write(f"{CASE}/T-{i}/case.json", f'{{"n": {i}}}')
        start.wait()
        results.append(m.sync(f"T-{i}", paths=[path]))

    run_parallel(*(lambda i=i: one(i) for i in range(count)))
    assert len(results) == count and all(r.committed for r in results)
    assert sh(m.ws, "status", "--porcelain") == ""
    subjects = remote_subjects(remote)
    assert sorted(s for s in subjects if s.startswith("T-")) == sorted(
        f"T-{i}" for i in range(count)
    )


def test_push_error_never_shows_the_token_in_the_remote_url(tmp_path: Path) -> None:
    m = Machine(tmp_path / "a", remote=None)
    sh(m.ws, "remote", "add", "origin", "http://oauth2:glpat-SECRETSECRET@127.0.0.1:1/x.git")
    m.write("x.md", "x")
    with pytest.raises(ServiceError) as caught:
        m.sync("unreachable")
    text = f"{caught.value.line()} {caught.value!r}"
    assert "SECRETSECRET" not in text
    assert "127.0.0.1:1" in text and "safe locally" in text
    # Our own messages name URLs too (git's own lines already hide the credentials).
    with pytest.raises(ConfigError) as mismatch:
        ensure_repo(
            m.ws, "https://oauth2:glpat-OTHERSECRET@gitlab.invalid/y.git", lock_dir=m.lock_dir
        )
    assert "SECRET" not in mismatch.value.line() and "gitlab.invalid/y.git" in mismatch.value.line()
