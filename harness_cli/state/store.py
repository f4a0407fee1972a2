"""Atomic JSON files under a lock: the only way state reaches disk.

Write: temp file in the same directory, fsync, ``os.replace``, fsync the directory — a reader
(or a process killed mid-write) sees the old content or the new, never a torn file.
Read-modify-write: inside the file's lock, because cron runs overlap.
Corrupt file: moved aside with a clear error, never silently reset.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from harness_cli import clock
from harness_cli.errors import StateError
from harness_cli.state.locks import hold

M = TypeVar("M", bound=BaseModel)


def atomic_write_bytes(path: Path, data: bytes) -> None:
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


def atomic_create_bytes(path: Path, data: bytes) -> bool:
    """Create ``path`` with ``data`` only if nothing is there yet (atomically: a reader never
    sees it half written); False when it already exists."""
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


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, data: object) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


class JsonFile(Generic[M]):
    """One state file backed by one pydantic model (with a ``schema_version`` field)."""

    def __init__(
        self, path: Path, model: type[M], *, lock_timeout: float = 30.0, compact: bool = False
    ) -> None:
        self.path = path
        self.model = model
        self.lock_timeout = lock_timeout
        self.compact = compact
        """No indentation: for a large file read every minute (socket-dedup)."""

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
        try:
            data = json.loads(raw)
            version = data.get("schema_version", 1) if isinstance(data, dict) else None
            current = self.model.model_fields["schema_version"].default
            if isinstance(version, int) and version > current:
                raise StateError(
                    f"{self.path} has schema_version {version}, "
                    f"newer than this harness ({current})",
                    hint="upgrade harness on this machine; the file was left untouched",
                )
            return self.model.model_validate(data)
        except (ValueError, ValidationError) as exc:
            aside = self._move_aside(raw)
            reason = str(exc).splitlines()[0][:200]
            raise StateError(
                f"{self.path} was unreadable ({reason}); moved it to {aside}",
                hint="inspect or restore it; the next run starts that file empty",
            ) from None

    def _move_aside(self, raw: bytes) -> Path:
        aside = self.path.with_name(f"{self.path.name}.corrupt-{clock.stamp()}")
        with contextlib.suppress(FileNotFoundError):
            # Only the bytes we failed on: a writer may have replaced the file meanwhile.
            if self.path.read_bytes() == raw:
                os.replace(self.path, aside)
        return aside
