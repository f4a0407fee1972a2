"""The one way the harness writes into a tree an agent can write: it never follows a link there.

A check the agent wrote can leave ``evals/baseline.json`` as a symlink to the operator's
harness.yaml; ``path.write_text`` would then overwrite that file (#28 R2). So a write below
such a root walks down from the root one folder at a time with ``O_NOFOLLOW``/``O_DIRECTORY``
(a symlinked folder stops it), refuses a symlink (or anything but a plain file) as the final
component, and — for an atomic write — puts a temp file beside the target and renames it into
place within that same folder descriptor: the bytes land in the folder that was checked, and
nowhere else, whatever is swapped in meanwhile.

The roots: a worktree (the caller names it) and the workspace, whose case folders the
investigator writes (:func:`guarded_root` finds it for every state write).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path, PurePosixPath

from harness_cli import paths
from harness_cli.errors import PolicyRefused

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def guarded_root(path: Path) -> Path | None:
    """The agent-writable tree ``path`` lies in, when it lies in one the harness knows of by
    itself (the workspace); None elsewhere ($HARNESS_HOME, the config: no agent writes there)."""
    workspace = Path(os.path.abspath(paths.workspace()))
    return workspace if Path(os.path.abspath(path)).is_relative_to(workspace) else None


def _refused(path: Path, why: str) -> PolicyRefused:
    return PolicyRefused(
        f"refusing to write {path}: {why}",
        hint="an agent (or code it wrote) may have planted it; nothing was written — "
        "inspect and remove it, then run again",
    )


def _parts(root: Path, path: Path) -> tuple[str, ...]:
    lexical = Path(os.path.abspath(path))
    try:
        rel = PurePosixPath(lexical.relative_to(Path(os.path.abspath(root))).as_posix())
    except ValueError:
        raise _refused(path, f"it is outside {root}") from None
    if not rel.parts or any(p in ("", ".", "..") for p in rel.parts):
        raise _refused(path, f"it does not name a file inside {root}")
    return rel.parts


@contextlib.contextmanager
def _folder(root: Path, path: Path, folders: tuple[str, ...]):  # type: ignore[no-untyped-def]
    """The descriptor of ``folders`` below ``root``, made where missing, no link followed
    (the root itself is the harness's, as are the folders above it)."""
    Path(root).mkdir(parents=True, exist_ok=True)
    fd = os.open(os.path.realpath(root), _DIR_FLAGS)
    try:
        for name in folders:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=fd)
            try:
                inner = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _refused(
                        path, f"{name}/ on its way is a symlink or not a folder"
                    ) from None
                raise
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def _check_final(fd: int, name: str, path: Path) -> bool:
    """True when ``name`` exists (a plain file); refuses a link, a folder, a device."""
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(info.st_mode):
        raise _refused(path, "it is a symlink")
    if not stat.S_ISREG(info.st_mode):
        raise _refused(path, "it is not a plain file")
    return True


def write(
    root: Path,
    path: Path,
    data: bytes,
    *,
    atomic: bool = True,
    exclusive: bool = False,
    mode: int = 0o600,
) -> bool:
    """Write ``data`` to ``path`` inside ``root`` without following any link below ``root``.

    ``atomic``: a temp file renamed into place (a reader sees old or new bytes); otherwise the
    file is rewritten in place, keeping its mode (an agent's file tools: an executable stays
    executable). ``exclusive``: only if nothing is there yet (False when something is).
    ``mode``: of a new file (the umask applies)."""
    *folders, name = _parts(root, path)
    with _folder(root, path, tuple(folders)) as fd:
        exists = _check_final(fd, name, path)
        if exclusive and exists:
            return False
        if not atomic:
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                out = os.open(name, flags, 0o666, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise _refused(path, "it is a symlink") from None
                raise
            with os.fdopen(out, "wb") as handle:
                handle.write(data)
            return True
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        out = os.open(tmp, flags, mode, dir_fd=fd)
        try:
            with os.fdopen(out, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            if exclusive:
                try:
                    os.link(tmp, name, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
                except FileExistsError:
                    return False
            else:
                os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=fd)
        os.fsync(fd)
        return True
