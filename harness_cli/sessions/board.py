"""The reservation refs on the workspace remote, with a compare-and-swap the remote enforces.

Each reservation ref under ``refs/harness/reservations/<sha1 of scope>/`` (a session's hold, or
the scope's gate: see reservations.py) points at a commit (empty tree, written in-process) whose
message is a :class:`ScopeDoc`. Reading is
one ``git fetch`` of the whole namespace into a private board repository; writing is one
``git push --atomic`` with ``--force-with-lease=<ref>:<sha read>`` on every ref it touches
(an empty expectation: the ref must not exist). The remote checks each old value under its ref
lock, so of two runners that read the same state only one push lands; the other re-reads and
re-decides. Never "read, then write" blindly. ``ops`` counts the remote round trips.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from harness_cli.errors import ServiceError
from harness_cli.logs import redact
from harness_cli.sessions.model import REF_PREFIX, ScopeDoc

SEEN = "refs/harness-seen/"
_LOST = (
    "stale info",
    "fetch first",
    "cannot lock ref",
    "atomic push failed",
    "non-fast-forward",
    "already exists",
    "failed to update ref",
)
"""Porcelain/stderr words of a push that lost the race (as opposed to a broken remote)."""


@dataclass
class Entry:
    sha: str
    doc: ScopeDoc


class Board:
    """``local``: a bare repository of this machine holding the objects it reads and writes;
    ``remote``: the workspace remote's URL (or a local bare repository for a local-only
    workspace: then the reservations are this machine's only)."""

    def __init__(self, local: Path, remote: str, *, timeout: float = 60.0) -> None:
        self.local = local
        self.remote = remote
        self.timeout = timeout
        self.ops = 0
        """Remote operations (fetch, push) made through this board."""
        self._empty_tree = ""

    def _git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "LC_ALL": "C",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": "harness",
            "GIT_AUTHOR_EMAIL": "harness@localhost",
            "GIT_COMMITTER_NAME": "harness",
            "GIT_COMMITTER_EMAIL": "harness@localhost",
        }
        try:
            proc = subprocess.run(
                ["git", "--git-dir", str(self.local), *args],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ServiceError(
                f"git {args[0]} of the reservation refs timed out after {self.timeout:.0f}s",
                hint="check the workspace remote, then run again",
            ) from None
        if check and proc.returncode != 0:
            raise ServiceError(
                redact(
                    f"git {args[0]} of the reservation refs failed: {proc.stderr.strip()[-300:]}"
                )
            )
        return proc

    def ensure(self) -> None:
        if not (self.local / "HEAD").exists():
            self.local.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                ["git", "init", "-q", "--bare", str(self.local)], check=True, capture_output=True
            )
        if self.remote.startswith("/") and not Path(self.remote, "HEAD").exists():
            Path(self.remote).mkdir(parents=True, exist_ok=True)
            subprocess.run(
                ["git", "init", "-q", "--bare", self.remote], check=True, capture_output=True
            )

    def snapshot(self, *, cached: bool = False) -> dict[str, Entry]:
        """Every reservation ref of the remote (one fetch): ref name → (sha, document).
        ``cached``: what this board last read or wrote, with no remote operation — only ever
        a guess: a write decided on it carries leases on what it saw, so the remote refuses
        it if anything moved since (reservations.py)."""
        self.ensure()
        read = self.local / "harness-read"
        if cached and not read.exists():
            cached = False  # never read: a guess from nothing would miss a first-layout hold
        if not cached:
            self.ops += 1
            self._git(
                "fetch",
                "-q",
                "--prune",
                "--no-tags",
                "--no-write-fetch-head",
                self.remote,
                f"+{REF_PREFIX}*:{SEEN}*",
            )
            read.touch()
        listed = self._git(
            "for-each-ref", "--format=%(refname)%09%(objectname)%09%(contents)", SEEN
        ).stdout
        found: dict[str, Entry] = {}
        for line in listed.splitlines():
            if line.count("\t") < 2:
                continue
            ref, sha, body = line.split("\t", 2)
            try:
                doc = ScopeDoc.model_validate_json(body)
            except (ValidationError, ValueError):
                doc = ScopeDoc(scope="?")  # unreadable: treated as empty, replaced on write
            found[REF_PREFIX + ref.removeprefix(SEEN)] = Entry(sha, doc)
        return found

    def _store(self, kind: str, body: bytes) -> str:
        """Write one loose object into the board repository in-process (what ``git
        hash-object -w`` does, without a subprocess per reservation commit)."""
        raw = f"{kind} {len(body)}\0".encode() + body
        sha = hashlib.sha1(raw).hexdigest()
        path = self.local / "objects" / sha[:2] / sha[2:]
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".tmp-{os.getpid()}-{sha[2:]}")
            tmp.write_bytes(zlib.compress(raw))
            os.replace(tmp, path)
        return sha

    def commit(self, doc: ScopeDoc) -> str:
        if not self._empty_tree:
            self._empty_tree = self._store("tree", b"")
        stamp = f"harness <harness@localhost> {int(time.time())} +0000"
        body = f"tree {self._empty_tree}\nauthor {stamp}\ncommitter {stamp}\n\n"
        return self._store("commit", (body + doc.model_dump_json() + "\n").encode())

    def _remember(self, written: dict[str, str]) -> None:
        """Mirror what just landed on the remote into the local copy (a local ref update, no
        remote operation), so the next acquire's guess from the cache starts from it."""
        lines = [
            f"update {SEEN}{ref.removeprefix(REF_PREFIX)} {sha}\n"
            if sha
            else f"delete {SEEN}{ref.removeprefix(REF_PREFIX)}\n"
            for ref, sha in written.items()
            if ref.startswith(REF_PREFIX)  # only the namespace a fetch mirrors
        ]
        if lines:
            subprocess.run(
                ["git", "--git-dir", str(self.local), "update-ref", "--stdin"],
                input="".join(lines),
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
            )

    def write(
        self, changes: dict[str, tuple[str, ScopeDoc | None]], *, atomic: bool = True
    ) -> dict[str, str] | None:
        """Apply ``{ref: (expected sha or "" for absent, new doc or None to delete)}`` in one
        atomic push; returns each ref's new sha ("" when deleted). None: another runner changed
        one of the refs first, and nothing was applied. ``atomic=False``: each ref on its own
        lease in the same push; returns only the refs that landed (never None)."""
        if not changes:
            return {}
        self.ensure()
        args = ["push", *(["--atomic"] if atomic else []), "--porcelain", self.remote]
        specs: list[str] = []
        written: dict[str, str] = {}
        for ref, (expected, doc) in sorted(changes.items()):
            args.append(f"--force-with-lease={ref}:{expected}")
            written[ref] = self.commit(doc) if doc is not None else ""
            specs.append(f"{written[ref]}:{ref}" if doc is not None else f":{ref}")
        self.ops += 1
        proc = self._git(*args, *specs, check=False)
        if proc.returncode == 0:
            self._remember(written)
            return written
        if not atomic and "\t" in proc.stdout:
            for line in proc.stdout.splitlines():
                flag, _, rest = line.partition("\t")
                if flag == "!" and "\t" in rest:
                    written.pop(rest.split("\t", 1)[0].rpartition(":")[2], None)
            self._remember(written)
            return written
        said = (proc.stdout + proc.stderr).lower()
        if any(word in said for word in _LOST):
            return None
        raise ServiceError(
            redact(f"git push of the reservation refs failed: {proc.stderr.strip()[-300:]}"),
            hint="check the workspace remote (`harness doctor`), then run again",
        )
