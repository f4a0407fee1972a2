"""A thin, typed wrapper over the git command line — only what workspace sync needs.

Plain ``subprocess`` on purpose: the CLI starts from cron every minute, and GitPython would add
an import and a long-lived ``git cat-file`` child for nothing we use. Every message that leaves
this module passes through the harness-wide ``redact``, because remote URLs may carry a token
(``https://oauth2:glpat-…@gitlab…``) and error lines end up in logs and in Slack.

Every command runs hardened (:mod:`git_guard`): an environment of git's own variables only, no
hook or fsmonitor whatever the config says, and in a linked worktree only after its ``.git``
file and the config git will read were checked — then with that git dir pinned.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from harness_cli.bounded import Bounded, drain
from harness_cli.errors import ServiceError
from harness_cli.logs import redact
from harness_cli.services import git_guard

FALLBACK_NAME = "harness"
"""Committer name used when git config has none, so a fresh VM never stops on
"Please tell me who you are"."""
FALLBACK_EMAIL = "harness@localhost"
DEFAULT_TIMEOUT = 300.0
"""Seconds one git command may run; a hung credential helper or network must not hang cron."""
OUTPUT_LIMIT = 64 << 20
"""The most of one git command's stdout :meth:`Git.run` holds: past it the command fails
instead of growing the harness without end (#28 R10: a diff, a log, a file listing of what an
agent committed is as large as the agent made it). Whatever may be larger is read with
:meth:`Git.reading` (as it comes), :meth:`Git.stream` or :meth:`Git.cut` (its two ends)."""
ERRORS_KEPT = 64 << 10
"""The tail of git's stderr kept for the error message."""

# Retryable refusals: the remote has commits we lack, or another push moved the branch between
# the remote's fast-forward check and its ref update ("cannot lock ref … but expected …").
_REJECTED = re.compile(
    r"\[rejected\].*\((?:fetch first|non-fast-forward)\)|cannot lock ref .* but expected"
)


class PushRejected(ServiceError):
    """The remote refused a non-fast-forward push: fetch, integrate and push again."""


class Git:
    """Runs git in ``repo_dir``. Methods raise :class:`ServiceError` with a redacted message."""

    def __init__(
        self,
        repo_dir: Path,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        gitdir: Path | None = None,
        common: Path | None = None,
    ) -> None:
        """``gitdir``/``common``: the git dir (and its repository) the harness made for this
        linked worktree; its ``.git`` must name exactly that one. Without them a linked
        worktree's git dir is still checked (:func:`git_guard.verify_link`) before each
        command."""
        self.repo_dir = Path(repo_dir)
        self.timeout = timeout
        self.gitdir = gitdir
        self.common = common
        self._identity: list[str] | None = None

    # -- plumbing ---------------------------------------------------------------------------

    def run(
        self, *args: str, input: str | None = None, env: Mapping[str, str] | None = None
    ) -> str:
        """Run ``git <args>``; return stdout without its trailing newline; raise on failure.
        ``input``: its stdin; ``env``: variables added to git's hardened environment."""
        out: str = self._exec(args, input=input, env=env).stdout
        return out.rstrip("\n")

    def run_bytes(self, *args: str, stdin: bytes | None = None) -> bytes:
        """``git <args>``'s stdout as bytes, undecoded (a diff whose digest must not depend on
        decoding; object contents from ``cat-file --batch`` fed ``stdin``). Same hardened
        environment and failures as :meth:`run`."""
        proc = self._exec(args, input=stdin, binary=True)
        return proc.stdout if isinstance(proc.stdout, bytes) else proc.stdout.encode()

    def stream(self, *args: str, into: Bounded) -> None:
        """Run ``git <args>`` and feed its stdout to ``into`` chunk by chunk, never holding it
        whole (a diff of whatever size the agent's change has, #28 R10); same hardened
        environment as :meth:`run`, raising on failure or after ``timeout``."""
        full = {**git_guard.env(), **self._pinned(self.repo_dir)}
        errors = Bounded(0, 4000)
        try:
            proc = subprocess.Popen(
                ["git", *git_guard.neutral_args(), *args], cwd=self.repo_dir, env=full,
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )  # fmt: skip
        except OSError as exc:
            raise ServiceError(
                redact(f"git {_verb(args)} failed in {self.repo_dir}: {exc}")
            ) from None
        assert proc.stdout is not None and proc.stderr is not None
        with proc.stdout, proc.stderr:
            done = drain({proc.stdout: into, proc.stderr: errors}, time.monotonic() + self.timeout)
        if not done:
            proc.kill()
        code = proc.wait()
        if not done or code != 0:
            detail = "timed out" if not done else errors.text().strip()[-300:]
            raise ServiceError(
                redact(f"git {_verb(args)} failed in {self.repo_dir} (exit {code}): {detail}")
            )

    def cut(self, *args: str, head: int, tail: int = 0) -> str:
        """``git <args>``'s stdout: its first ``head`` and last ``tail`` bytes, the middle
        counted and said (text for a prompt or a message, of output an agent controls)."""
        out = Bounded(head, tail)
        self.stream(*args, into=out)
        return out.text("\n… ({dropped} more bytes of git output left out) …\n").rstrip("\n")

    @contextlib.contextmanager
    def reading(self, *args: str, stdin: bytes | None = None) -> Iterator[IO[bytes]]:
        """``git <args>``'s stdout as a pipe to read at the caller's pace, never held whole
        (blobs, diffs and logs of commits an agent made: any size, #28 R10). Same hardened
        environment as :meth:`run`; ``stdin`` is fed from a thread (git may answer before it
        has read all of it). Raises on failure or after ``timeout`` (git is killed then) once
        the block ends; leaving the block early kills git."""
        full = {**git_guard.env(), **self._pinned(self.repo_dir)}
        try:
            proc = subprocess.Popen(
                ["git", *git_guard.neutral_args(), *args], cwd=self.repo_dir, env=full,
                stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )  # fmt: skip
        except OSError as exc:
            raise ServiceError(
                redact(f"git {_verb(args)} failed in {self.repo_dir}: {exc}")
            ) from None
        assert proc.stdout is not None and proc.stderr is not None
        errors = Bounded(0, 4000)
        helpers = [threading.Thread(target=drain, args=({proc.stderr: errors}, None))]
        if stdin is not None:
            helpers.append(threading.Thread(target=_feed, args=(proc.stdin, stdin)))
        timer = threading.Timer(self.timeout, proc.kill)
        for helper in [*helpers, timer]:
            helper.daemon = True
            helper.start()
        finished = False
        try:
            with proc.stdout:
                yield proc.stdout
            finished = True
        finally:
            if not finished:
                proc.kill()
            code = proc.wait()
            timed_out = not timer.is_alive() and code < 0
            timer.cancel()
            for helper in helpers:
                helper.join()
            proc.stderr.close()
        if code != 0:
            detail = "timed out" if timed_out else errors.text().strip()[-300:]
            raise ServiceError(
                redact(f"git {_verb(args)} failed in {self.repo_dir} (exit {code}): {detail}")
            )

    def _exec(
        self,
        args: Sequence[str],
        *,
        check: bool = True,
        cwd: Path | None = None,
        input: str | bytes | None = None,
        env: Mapping[str, str] | None = None,
        binary: bool = False,
    ) -> subprocess.CompletedProcess[Any]:
        where = cwd or self.repo_dir
        full = {**git_guard.env(), **(env or {}), **self._pinned(where)}
        argv = ["git", *git_guard.neutral_args(), *args]
        data = input.encode("utf-8") if isinstance(input, str) else input
        try:
            popen = subprocess.Popen(
                argv, cwd=where, env=full,
                stdin=subprocess.DEVNULL if data is None else subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )  # fmt: skip
        except FileNotFoundError:
            if shutil.which("git") is None:
                raise ServiceError(
                    "git failed. Is it installed?",
                    hint="install git (e.g. apt-get install git) and run again",
                ) from None
            raise ServiceError(
                f"git {_verb(args)} failed: directory {where} does not exist"
            ) from None
        # Read into bounded buffers (#28 R10), never whole: OUTPUT_LIMIT + 1 tells "too much".
        out, err = Bounded(OUTPUT_LIMIT + 1, 0), Bounded(0, ERRORS_KEPT)
        feeder = threading.Thread(target=_feed, args=(popen.stdin, data), daemon=True)
        if data is not None:
            feeder.start()
        assert popen.stdout is not None and popen.stderr is not None
        with popen.stdout, popen.stderr:
            done = drain({popen.stdout: out, popen.stderr: err}, time.monotonic() + self.timeout)
        if not done:
            popen.kill()
        code = popen.wait()
        if data is not None:
            feeder.join()
        if not done:
            raise ServiceError(
                f"git {_verb(args)} timed out after {self.timeout:.0f}s in {where}",
                hint="check the network and the remote, then run again",
            )
        if out.total > OUTPUT_LIMIT:
            raise ServiceError(
                f"git {_verb(args)} printed more than {OUTPUT_LIMIT >> 20} MB in {where} "
                f"({out.total:,} bytes): too much to hold",
                hint="something in this repository is far larger than a change should be "
                "(a huge file or diff): look at its last commits",
            )
        proc: subprocess.CompletedProcess[Any] = subprocess.CompletedProcess(
            argv, code, bytes(out.head), bytes(err.tail)
        )
        if not binary:  # as text=True would: utf-8, universal newlines
            proc.stdout, proc.stderr = _text(proc.stdout), _text(proc.stderr)
        if check and proc.returncode != 0:
            raise self._failure(args, proc)
        return proc

    def _pinned(self, where: Path) -> dict[str, str]:
        """``GIT_DIR``/``GIT_WORK_TREE`` of a linked worktree, checked just now; git never
        reads the ``.git`` file itself. Nothing for a plain repository or a folder outside."""
        if where != self.repo_dir:
            return {}
        gitdir = self.gitdir
        if gitdir is None:
            link = self.repo_dir / ".git"
            if not os.path.lexists(link) or (link.is_dir() and not link.is_symlink()):
                return {}
            gitdir = git_guard.read_link(self.repo_dir)
            if gitdir is None:
                return {}
        git_guard.verify_link(self.repo_dir, gitdir, self.common)
        return {"GIT_DIR": str(gitdir), "GIT_WORK_TREE": str(self.repo_dir)}

    def _failure(
        self,
        args: Sequence[str],
        proc: subprocess.CompletedProcess[Any],
        cls: type[ServiceError] = ServiceError,
    ) -> ServiceError:
        lines = proc.stderr.splitlines()
        # push --porcelain reports each refused ref on stdout as "!<tab>ref<tab>[reason]".
        lines += [line for line in proc.stdout.splitlines() if line.startswith("!")]
        detail = " | ".join(
            line.strip() for line in (lines or proc.stdout.splitlines())[-6:] if line.strip()
        )
        return cls(
            redact(
                f"git {_verb(args)} failed in {self.repo_dir} (exit {proc.returncode}): {detail}"
            )
        )

    def _ok(self, *args: str) -> bool:
        return self._exec(args, check=False).returncode == 0

    def _identity_args(self) -> list[str]:
        """``-c user.*`` for what config lacks; GIT_AUTHOR_*/GIT_COMMITTER_* env still wins."""
        if self._identity is None:
            self._identity = []
            for key, fallback in (("user.name", FALLBACK_NAME), ("user.email", FALLBACK_EMAIL)):
                if not self._ok("config", "--get", key):
                    self._identity += ["-c", f"{key}={fallback}"]
        return self._identity

    def git_path(self, name: str) -> Path:
        """The path of ``name`` inside the git dir (``.git/index.lock`` …), worktree-aware."""
        return self.git_paths(name)[0]

    def git_paths(self, *names: str) -> list[Path]:
        """``git_path`` of each name, in one git call (a sync checks four of them)."""
        out = self.run("rev-parse", *[a for name in names for a in ("--git-path", name)])
        paths = [Path(line) for line in out.splitlines()]
        if len(paths) != len(names):
            raise ServiceError(f"git rev-parse --git-path gave {len(paths)} paths for {names}")
        return [p if p.is_absolute() else self.repo_dir / p for p in paths]

    # -- repository -------------------------------------------------------------------------

    def is_repo(self) -> bool:
        """True when ``repo_dir`` is the top level of a work tree (not merely inside one)."""
        if not self.repo_dir.is_dir():
            return False
        proc = self._exec(["rev-parse", "--show-toplevel"], check=False)
        if proc.returncode != 0:
            return False
        return Path(proc.stdout.strip()).resolve() == self.repo_dir.resolve()

    def init(self, initial_branch: str = "main") -> None:
        self.repo_dir.mkdir(parents=True, exist_ok=True)
        self.run("init", "-q", f"--initial-branch={initial_branch}")

    @classmethod
    def clone(cls, url: str, dest: Path, *, timeout: float = DEFAULT_TIMEOUT) -> Git:
        dest.parent.mkdir(parents=True, exist_ok=True)
        Git(dest.parent, timeout=timeout)._exec(["clone", "-q", "--", url, str(dest)])
        return cls(dest, timeout=timeout)

    def current_branch(self) -> str | None:
        """The checked-out branch, or None on a detached HEAD (e.g. mid-rebase)."""
        proc = self._exec(["symbolic-ref", "--short", "-q", "HEAD"], check=False)
        if proc.returncode != 0:
            return None
        return proc.stdout.strip() or None

    def head_sha(self, ref: str = "HEAD") -> str | None:
        """The commit ``ref`` names, or None when it does not exist (unborn branch, no ref)."""
        proc = self._exec(["rev-parse", "--verify", "-q", f"{ref}^{{commit}}"], check=False)
        if proc.returncode != 0:
            return None
        return proc.stdout.strip() or None

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        return self._ok("merge-base", "--is-ancestor", ancestor, descendant)

    def status_porcelain(self) -> str:
        # --no-optional-locks: a status must never take index.lock away from a real writer.
        return self.run("--no-optional-locks", "status", "--porcelain")

    # -- remotes ----------------------------------------------------------------------------

    def has_remote(self, name: str = "origin") -> bool:
        return name in self.run("remote").split()

    def remote_url(self, name: str = "origin", *, push: bool = False) -> str | None:
        """``name``'s URL (``push``: where a push goes, which a dry run's copy points away)."""
        proc = self._exec(["remote", "get-url", *(["--push"] if push else []), name], check=False)
        return proc.stdout.strip() if proc.returncode == 0 else None

    def add_remote(self, name: str, url: str) -> None:
        self.run("remote", "add", name, url)

    def remote_heads(self, remote: str) -> dict[str, str]:
        """Branch name → sha on ``remote`` (a remote name or a URL); empty for an empty remote."""
        out = self.run("ls-remote", "--heads", remote)
        heads: dict[str, str] = {}
        for line in out.splitlines():
            sha, _, ref = line.partition("\t")
            heads[ref.removeprefix("refs/heads/")] = sha
        return heads

    def remote_default_branch(self, remote: str) -> str | None:
        """The branch the remote's HEAD points at, when the remote says so."""
        for line in self.run("ls-remote", "--symref", remote, "HEAD").splitlines():
            if line.startswith("ref: refs/heads/"):
                return line.split()[1].removeprefix("refs/heads/")
        return None

    def fetch(self, remote: str = "origin") -> None:
        self.run("fetch", "-q", remote)

    def push(self, remote: str, branch: str) -> None:
        """Push the local ``branch``; :class:`PushRejected` when the remote has moved on."""
        refspec = f"refs/heads/{branch}:refs/heads/{branch}"
        args = ["push", "--porcelain", remote, refspec]
        proc = self._exec(args, check=False)
        if proc.returncode == 0:
            return
        if _REJECTED.search(proc.stdout + proc.stderr):
            raise self._failure(args, proc, PushRejected)
        raise self._failure(args, proc)

    # -- index and history ------------------------------------------------------------------

    def add(self, paths: Sequence[Path | str] | None = None) -> None:
        """Stage additions, changes and deletions under ``paths`` (the whole tree when None;
        nothing for an empty list)."""
        specs = ["."] if paths is None else [str(p) for p in paths]
        if specs:
            self.run("add", "-A", "--", *specs)

    def is_tracked(self, path: Path | str) -> bool:
        """True when the index holds ``path`` or anything under it."""
        return bool(self.run("ls-files", "--", str(path)))

    def commit(self, message: str, *, allow_empty: bool = False) -> str | None:
        """Commit the index; return the new sha, or None when nothing is staged."""
        if not allow_empty and self._ok("diff", "--cached", "--quiet"):
            return None
        extra = ["--allow-empty"] if allow_empty else []
        # a commit message leaves with the push: the one redaction point first
        self.run(*self._identity_args(), "commit", "-q", "-m", redact(message), *extra)
        return self.head_sha()

    def rebase(self, onto: str) -> bool:
        """Rebase the current branch onto ``onto``; False on a conflict (left in progress)."""
        args = [*self._identity_args(), "rebase", "-q", "--autostash", onto]
        proc = self._exec(args, check=False)
        if proc.returncode == 0:
            return True
        if self.rebase_in_progress():
            return False
        raise self._failure(args, proc)

    def rebase_abort(self) -> None:
        self.run("rebase", "--abort")

    def rebase_in_progress(self) -> bool:
        return self.git_path("rebase-merge").exists() or self.git_path("rebase-apply").exists()

    def merge(self, ref: str, strategy_option: str | None = None) -> bool:
        """Merge ``ref`` with a merge commit; False on a conflict (left in progress).

        Unrelated histories are allowed: a workspace initialized on two machines before they
        first met must still converge.
        """
        extra = ["-X", strategy_option] if strategy_option else []
        args = [
            *self._identity_args(),
            "merge", "-q", "--no-edit", "--no-ff", "--autostash",
            "--allow-unrelated-histories", *extra, ref,
        ]  # fmt: skip
        proc = self._exec(args, check=False)
        if proc.returncode == 0:
            return True
        if self.merge_in_progress():
            return False
        raise self._failure(args, proc)

    def merge_abort(self) -> None:
        self.run("merge", "--abort")

    def merge_in_progress(self) -> bool:
        return self.git_path("MERGE_HEAD").exists()

    def unmerged_paths(self) -> list[str]:
        out = self._exec(["diff", "--name-only", "--diff-filter=U", "-z"]).stdout
        return sorted({p for p in out.split("\0") if p})

    def merge_base(self, a: str, b: str) -> str | None:
        proc = self._exec(["merge-base", a, b], check=False)
        return proc.stdout.strip() or None if proc.returncode == 0 else None

    def show(self, spec: str) -> str | None:
        """``git show REV:PATH``'s text; None when that path is not in that revision."""
        proc = self._exec(["show", spec], check=False)
        return proc.stdout if proc.returncode == 0 else None

    def amend(self) -> str | None:
        """Fold what is staged into the last commit (an unpushed local merge), same message."""
        self.run(*self._identity_args(), "commit", "-q", "--amend", "--no-edit", "--allow-empty")
        return self.head_sha()

    def conclude_merge(self) -> str | None:
        """Commit an in-progress merge whose conflicts are resolved in the index."""
        self.run(*self._identity_args(), "commit", "-q", "--no-edit")
        return self.head_sha()


def _feed(pipe: IO[bytes] | None, data: bytes) -> None:
    assert pipe is not None
    with contextlib.suppress(BrokenPipeError, ValueError), pipe:  # git stopped reading early
        pipe.write(data)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")


def _verb(args: Sequence[str]) -> str:
    """The git subcommand in ``args``, skipping ``-c key=value`` pairs and global flags."""
    it = iter(args)
    for arg in it:
        if arg == "-c":
            next(it, None)
        elif not arg.startswith("-"):
            return arg
    return "?"
