"""Atomic JSON files under a lock: the only way state reaches disk.

Write: temp file in the same directory, fsync, ``os.replace``, fsync the directory — a reader
(or a process killed mid-write) sees the old content or the new, never a torn file.
Read-modify-write: inside the file's lock, because cron runs overlap.
Corrupt file: moved aside with a clear error (exit 2), never silently reset — except a file
that fails closed (the kill switch): it reads as its safe stand-in, its bytes are kept beside it,
and the operator is told once (``unreadable_copies`` lists what is still to be told).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from harness_cli import clock
from harness_cli.errors import StateError
from harness_cli.logs import event
from harness_cli.redaction import redact_bytes
from harness_cli.state import nofollow
from harness_cli.state.locks import hold

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger("harness.state")

UNREADABLE = ".unreadable-"
"""``<file>.unreadable-<sha>``: the bytes of a fail-closed file that could not be read."""
TOLD = ".told"
"""``<copy>.told``: the operator has been told about that copy (a DM went out)."""


def atomic_write_bytes(
    path: Path, data: bytes, *, verbatim: bool = False, inside: Path | None = None
) -> None:
    """Write ``data`` to ``path`` atomically. Text passes the one redaction point first: case
    files are committed and pushed, state files are read back into posts and prompts.
    ``verbatim`` is for the few files whose bytes must stay exact (a file restored as it was,
    the sandbox's env file of fake tokens). ``inside``: a tree an agent may write (a
    worktree); there, and in the workspace, no symlink is followed (:mod:`nofollow`)."""
    if not verbatim:
        data = redact_bytes(data)
    root = inside or nofollow.guarded_root(path)
    if root is not None:
        nofollow.write(root, path, data)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def atomic_create_bytes(path: Path, data: bytes, *, verbatim: bool = False) -> bool:
    """Create ``path`` with ``data`` only if nothing is there yet (atomically: a reader never
    sees it half written); False when it already exists. Redacted like ``atomic_write_bytes``."""
    if not verbatim:
        data = redact_bytes(data)
    root = nofollow.guarded_root(path)
    if root is not None:
        return nofollow.write(root, path, data, exclusive=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return True


def atomic_write_text(
    path: Path, text: str, *, verbatim: bool = False, inside: Path | None = None
) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), verbatim=verbatim, inside=inside)


def atomic_write_json(path: Path, data: object) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


class JsonFile(Generic[M]):
    """One state file backed by one pydantic model (with a ``schema_version`` field)."""

    def __init__(
        self,
        path: Path,
        model: type[M],
        *,
        lock_timeout: float = 30.0,
        fail_closed: Callable[[Path, str], M] | None = None,
        compact: bool = False,
    ) -> None:
        """``fail_closed(path, reason)`` builds the safe stand-in an unreadable file reads as
        (instead of moving it aside and raising); the next write replaces the bad bytes.
        ``compact``: no indentation, for a large file read every minute (socket-dedup)."""
        self.path = path
        self.model = model
        self.lock_timeout = lock_timeout
        self.fail_closed = fail_closed
        self.stood_in: str | None = None
        """Why the last read returned the fail-closed stand-in (None: it read the file)."""
        self.compact = compact

    def read(self) -> M:
        """A consistent snapshot without the lock (writes are atomic renames)."""
        return self._load()

    @contextlib.contextmanager
    def update(self) -> Iterator[M]:
        """``with file.update() as state: state.x = …`` — written back atomically on success;
        nothing is written if the block raises."""
        with hold(f"state-{self.path.name}", timeout=self.lock_timeout, what=str(self.path)):
            state = self._load()
            yield state
            self.write(state)

    def write(self, state: M) -> None:
        indent = None if self.compact else 2
        atomic_write_text(self.path, state.model_dump_json(indent=indent) + "\n")

    def _load(self) -> M:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return self.model()
        except OSError as exc:  # a directory, no permission: unreadable all the same
            if self.fail_closed is not None:
                return self._stand_in(b"", f"cannot be read: {exc.strerror or exc}")
            raise StateError(
                f"{self.path} cannot be read ({exc.strerror or exc})",
                hint="fix its permissions, or move it away to start that file empty",
            ) from None
        try:
            check_schema_version(self.path, raw, self.model)
        except StateError as exc:
            if self.fail_closed is None:
                raise
            return self._stand_in(raw, exc.message)
        try:
            return self.model.model_validate(json.loads(raw))
        except (ValueError, ValidationError) as exc:
            if self.fail_closed is not None:
                return self._stand_in(raw, unreadable_reason(raw, exc))
            aside = self._move_aside(raw)
            raise StateError(
                f"{self.path} was unreadable ({unreadable_reason(raw, exc)}); moved it to {aside}",
                hint=f"mend it and move it back (mv {aside} {self.path}), or leave it: "
                "the next run starts that file empty",
            ) from None

    def _stand_in(self, raw: bytes, reason: str) -> M:
        """The fail-closed read: keep the bad bytes beside the file (once per content, so the
        operator is told once) and read as the safe stand-in."""
        assert self.fail_closed is not None
        self.stood_in = reason
        copy, new = self._keep_copy(raw)
        if new:
            event(
                log,
                "state_unreadable_fail_closed",
                logging.ERROR,
                file=str(self.path),
                reason=reason,
                copy=str(copy),
            )
        return self.fail_closed(self.path, reason)

    def _keep_copy(self, raw: bytes) -> tuple[Path, bool]:
        digest = hashlib.sha256(raw).hexdigest()[:12]
        copy = self.path.with_name(f"{self.path.name}{UNREADABLE}{digest}")
        if copy.exists():
            return copy, False
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{copy.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(raw)
            os.link(tmp, copy)  # fails if another reader kept it first: exactly one tells
            return copy, True
        except FileExistsError:
            return copy, False
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def unreadable_copies(self) -> list[Path]:
        """Kept copies of unreadable contents the operator has not been told about by DM yet
        (``mark_told`` records that they were)."""
        found = sorted(self.path.parent.glob(f"{self.path.name}{UNREADABLE}*"))
        return [p for p in found if not p.name.endswith(TOLD) and not _told(p).exists()]

    @staticmethod
    def mark_told(copy: Path) -> None:
        _told(copy).touch()

    def _move_aside(self, raw: bytes) -> Path:
        aside = self.path.with_name(f"{self.path.name}.corrupt-{clock.stamp()}")
        with contextlib.suppress(FileNotFoundError):
            # Only the bytes we failed on: a writer may have replaced the file meanwhile.
            if self.path.read_bytes() == raw:
                os.replace(self.path, aside)
        return aside


def _told(copy: Path) -> Path:
    return copy.with_name(copy.name + TOLD)


def check_schema_version(path: Path, raw: bytes, model: type[BaseModel]) -> None:
    """A file written by a newer harness is refused, and left untouched: this harness would
    drop or misread what it does not know."""
    try:
        data = json.loads(raw)
    except ValueError:
        return
    version = data.get("schema_version", 1) if isinstance(data, dict) else None
    current = model.model_fields["schema_version"].default
    if isinstance(version, int) and not isinstance(version, bool) and version > current:
        raise StateError(
            f"{path} has schema_version {version}, newer than this harness ({current})",
            hint="upgrade harness on this machine; the file was left untouched",
        )


def unreadable_reason(raw: bytes, exc: Exception) -> str:
    """Why a file did not load, in a few words an operator can act on."""
    if not raw.strip():
        return "the file is empty"
    if isinstance(exc, ValidationError):
        errors = exc.errors()
        first = errors[0]
        where = ".".join(str(p) for p in first["loc"]) or "the top level"
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        if first["type"] == "json_invalid":
            return "not valid JSON"
        return f"{where}: {first['msg']}{more}"
    if isinstance(exc, UnicodeDecodeError):
        return "binary, not UTF-8 JSON"
    return f"not valid JSON: {str(exc).splitlines()[0][:160]}"
