"""The anthropic runtime's tools, named and shaped like the claude CLI's, each with a contract.

The model proposes a call; the contract — not the model — decides whether and how it runs:

=====  ===========  ==========  =======  ==============================================
tool   effect       retry-safe  timeout  path rule
=====  ===========  ==========  =======  ==============================================
Read   read-only    yes         30 s     inside the run's readable roots (regular files)
Glob   read-only    yes         60 s     inside the readable roots
Grep   read-only    yes         60 s     inside the readable roots
Write  writes-file  no          30 s     inside allowed_root, never message.json, a
                                         ``.git`` or what the box pins; no link followed
Edit   writes-file  no          30 s     as Write
Bash   external     no          600 s    in the sandbox (``agents/sandbox.py``); the guard
                                         reverts what changed outside allowed_root after
=====  ===========  ==========  =======  ==============================================

Write and Edit run in the harness's own process, outside the box: the box's rule is theirs too.
A ``.git`` anywhere (file or folder, any case, reached through a symlink or not) would let an
agent point the harness's next ``git status`` at a git dir of its making (#28 R1), so it is
refused, as is every path the box pins; the file is written with no symlink followed
(``state.nofollow``).

Read-only calls of one turn may run concurrently; the rest run one at a time, in order. A
retry-safe call is tried again once after a transient OS error; a write never is, since the
first attempt may have landed. Arguments are checked against the schema before anything runs.
Bash runs within the box's limits (``agents/limits.py``) and its output is read through a
bounded buffer (``harness_cli/bounded.py``): the model gets its head and tail, and how much of the
middle was left out.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness_cli import bounded
from harness_cli.agents import lifetime, limits, sandbox
from harness_cli.agents.guard import SKIP_DIRS, is_pinned
from harness_cli.agents.policy import is_readable
from harness_cli.agents.sandbox_settings import LimitSettings
from harness_cli.bounded import CHUNK, Bounded
from harness_cli.errors import PolicyRefused
from harness_cli.state import nofollow

Effect = Literal["read-only", "writes-file", "writes", "external"]
"""``writes``: an MCP tool that changes something beyond the files (``mcp_contracts``)."""

READ_LINES = 2000
LINE_CHARS = 2000
LIST_LIMIT = 200
BASH_OUTPUT_CHARS = 30_000
BASH_DEFAULT_MS = 120_000
GREP_MAX_FILE_BYTES = 4 * 1024 * 1024
EDIT_MAX_BYTES = 16 * 1024 * 1024
TOOLS_TIMEOUT_CAP_S = 600.0
KILLED_DRAIN_S = 5.0
"""After a timeout's kill, how long the rest of the output may take to arrive."""
_TRANSIENT = {errno.EAGAIN, errno.EINTR, errno.EBUSY, errno.ETIMEDOUT, errno.EIO}


class ToolFailure(Exception):
    """What the model sees as an ``is_error`` tool_result."""


@dataclass(frozen=True)
class ToolContext:
    workdir: Path
    allowed_root: Path
    deadline: float
    """``time.monotonic()`` value at which the run's wall clock ends."""
    readable: tuple[Path, ...] = ()
    """Where Read, Glob and Grep may look (``policy.readable_roots``); nowhere else."""
    box: sandbox.View | None = None
    """The sandbox Bash runs in; None only when the operator opted out of it."""
    home: Path = Path("/nonexistent")
    """The agent's scratch HOME."""
    limits: LimitSettings = field(default_factory=LimitSettings)
    """The bounds of each Bash command's process tree (``sandbox.limits``)."""

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


@dataclass(frozen=True)
class ToolContract:
    name: str
    effect: Effect
    retry_safe: bool
    timeout_s: float
    description: str
    properties: dict[str, dict[str, Any]]
    required: tuple[str, ...]
    run: Callable[[ToolContext, dict[str, Any]], str]
    path_arg: str | None = None
    """The argument naming the file a ``writes-file`` tool changes (checked before the run)."""
    input_schema: dict[str, Any] | None = None
    """An MCP tool's own JSON schema, offered as the server wrote it (``properties`` and
    ``required`` are what the arguments are checked against)."""

    def schema(self) -> dict[str, Any]:
        if self.input_schema is not None:
            return {
                "name": self.name,
                "description": self.description,
                "input_schema": self.input_schema,
            }
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": {
                "type": "object",
                "properties": self.properties,
                "required": list(self.required),
            },
        }

    def check_args(self, args: Any) -> dict[str, Any]:
        if not isinstance(args, dict):
            raise ToolFailure(f"{self.name}: input must be an object")
        for name in self.required:
            if name not in args:
                raise ToolFailure(f"{self.name}: missing required parameter {name!r}")
        types = {"string": str, "integer": int, "boolean": bool}
        for name, value in args.items():
            spec = self.properties.get(name)
            if spec is None:
                raise ToolFailure(f"{self.name}: unknown parameter {name!r}")
            want = types.get(str(spec.get("type")))
            bad_bool = want is int and isinstance(value, bool)
            if want is not None and (not isinstance(value, want) or bad_bool):
                raise ToolFailure(f"{self.name}: {name!r} must be a {spec['type']}")
        return args


def call(contract: ToolContract, ctx: ToolContext, args: Any) -> str:
    """Validate, apply the path rule, run (retrying once if the contract allows). Raises
    ``ToolFailure`` with the message the model should see."""
    checked = contract.check_args(args)
    if contract.effect == "writes-file" and contract.path_arg:
        write_target(str(checked[contract.path_arg]), ctx)
    attempts = 2 if contract.retry_safe else 1
    for attempt in range(attempts):
        try:
            return contract.run(ctx, checked)
        except OSError as exc:
            if exc.errno in _TRANSIENT and attempt + 1 < attempts:
                continue
            raise ToolFailure(f"{contract.name} failed: {exc.strerror or exc}") from None
    raise AssertionError("unreachable")


def _path(raw: str, ctx: ToolContext) -> Path:
    path = Path(raw).expanduser()
    return path if path.is_absolute() else ctx.workdir / path


def read_target(raw: str, ctx: ToolContext) -> Path:
    """The path a read may look at, or a refusal (#21 p1: the role's roots, nothing else)."""
    path = _path(raw, ctx)
    if not is_readable(path, ctx.readable):
        raise ToolFailure(f"refused: {raw} is outside the folders this run may read")
    return path


def write_target(raw: str, ctx: ToolContext) -> Path:
    """The real file a write would change — symlinks and ``..`` resolved — or a refusal."""
    given = _path(raw, ctx)
    target = Path(os.path.realpath(given))
    root = Path(os.path.realpath(ctx.allowed_root))
    if not target.is_relative_to(root):
        raise ToolFailure(f"refused: {raw} is outside the writable folder {root}")
    if is_pinned(target, root, ctx.workdir):
        raise ToolFailure(f"refused: {target.name} is the case's original message; read-only")
    if any(_is_git(part) for part in (*given.parts, *target.relative_to(root).parts)):
        raise ToolFailure(f"refused: {raw} is git's own (.git); only the harness writes there")
    pinned = {Path(os.path.realpath(p)) for p in (ctx.box.pinned if ctx.box else ())}
    if any(target == p or target.is_relative_to(p) for p in pinned):
        raise ToolFailure(f"refused: {raw} is read-only in this run")
    return target


def _is_git(name: str) -> bool:
    """``.git`` as any file system may spell it: any case, trailing dots or spaces, the 8.3
    short name."""
    folded = name.casefold().rstrip(". ")
    return folded == ".git" or folded == "git~1"


# -- read-only --------------------------------------------------------------------------------


def _read(ctx: ToolContext, args: dict[str, Any]) -> str:
    path = read_target(args["file_path"], ctx)
    if not path.exists():
        raise ToolFailure(f"File does not exist: {path}")
    if not path.is_file():
        raise ToolFailure(f"Not a regular file: {path}")
    start = max(1, int(args.get("offset", 1)))
    limit = max(1, int(args.get("limit", READ_LINES)))
    # Line by line, each line read only up to what is shown (#28 R10): the file may be one the
    # agent wrote, of any size, in one line.
    chosen, count = [], 0
    with path.open("rb") as handle:
        if b"\0" in handle.read(8192):
            raise ToolFailure(f"{path} is a binary file ({path.stat().st_size} bytes)")
        handle.seek(0)
        while line := handle.readline(LINE_CHARS * 4):
            count += 1
            whole = line.endswith(b"\n")
            if start <= count < start + limit:
                chosen.append(line.decode("utf-8", "replace").rstrip("\r\n")[:LINE_CHARS])
            while not whole and (more := handle.readline(CHUNK)):  # the rest of a long line
                whole = more.endswith(b"\n")
    if not chosen:
        return "(empty file)" if not count else f"(no lines from {start}; the file has {count})"
    return "\n".join(f"{n}\t{line}" for n, line in enumerate(chosen, start))


def _glob(ctx: ToolContext, args: dict[str, Any]) -> str:
    base = read_target(args.get("path") or str(ctx.workdir), ctx)
    found = [
        p
        for p in base.glob(args["pattern"])
        if p.is_file()
        and not SKIP_DIRS.intersection(p.relative_to(base).parts)
        and is_readable(p, ctx.readable)
    ]
    found.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    if not found:
        return "No files found"
    more = f"\n(showing {LIST_LIMIT} of {len(found)})" if len(found) > LIST_LIMIT else ""
    return "\n".join(str(p) for p in found[:LIST_LIMIT]) + more


def _grep(ctx: ToolContext, args: dict[str, Any]) -> str:
    try:
        regex = re.compile(args["pattern"])
    except re.error as exc:
        raise ToolFailure(f"invalid regular expression: {exc}") from None
    base = read_target(args.get("path") or str(ctx.workdir), ctx)
    pattern = args.get("glob")
    content = args.get("output_mode") == "content"
    out: list[str] = []
    for file in [base] if base.is_file() else _files(base):
        if pattern and not fnmatch.fnmatch(file.name, pattern):
            continue
        if not is_readable(file, ctx.readable):  # a symlink out of the roots
            continue
        try:
            if file.stat().st_size > GREP_MAX_FILE_BYTES:
                continue
            data = file.read_bytes()
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue
        text = data.decode("utf-8", "replace")
        if not content:
            if regex.search(text):
                out.append(str(file))
        else:
            for n, line in enumerate(text.splitlines(), 1):
                if regex.search(line):
                    out.append(f"{file}:{n}:{line[:LINE_CHARS]}")
        if len(out) >= LIST_LIMIT:
            out.append(f"(stopped at {LIST_LIMIT} results)")
            break
    return "\n".join(out) if out else "No matches found"


def _files(base: Path) -> list[Path]:
    found: list[Path] = []
    for folder, dirs, names in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        found += [Path(folder) / n for n in sorted(names)]
    return found


# -- writes -----------------------------------------------------------------------------------


def _write(ctx: ToolContext, args: dict[str, Any]) -> str:
    target = write_target(args["file_path"], ctx)
    existed = target.exists()
    _put(ctx, target, args["content"])
    verb = "updated" if existed else "created"
    return f"File {verb} successfully at: {target}"


def _put(ctx: ToolContext, target: Path, text: str) -> None:
    """Write in place (an executable stays executable), following no link on the way."""
    try:
        root = Path(os.path.realpath(ctx.allowed_root))
        nofollow.write(root, target, text.encode("utf-8"), atomic=False)
    except PolicyRefused as exc:
        raise ToolFailure(f"refused: {exc.message}") from None


def _edit(ctx: ToolContext, args: dict[str, Any]) -> str:
    target = write_target(args["file_path"], ctx)
    old, new = args["old_string"], args["new_string"]
    if not target.is_file():
        raise ToolFailure(f"File does not exist: {target}")
    if old == new:
        raise ToolFailure("old_string and new_string are the same; nothing to change")
    if target.stat().st_size > EDIT_MAX_BYTES:  # read whole below: never an agent's 1 GB file
        raise ToolFailure(f"{target} is larger than {EDIT_MAX_BYTES >> 20} MB; edit it with Bash")
    text = target.read_text(encoding="utf-8")
    count = text.count(old)
    if count == 0:
        raise ToolFailure(f"String to replace not found in file: {old[:200]!r}")
    if count > 1 and not args.get("replace_all"):
        raise ToolFailure(
            f"Found {count} matches of the string to replace; add context to make it unique "
            "or set replace_all"
        )
    replace_all = bool(args.get("replace_all"))
    _put(ctx, target, text.replace(old, new, -1 if replace_all else 1))
    replaced = count if replace_all else 1
    return f"The file {target} has been updated successfully ({replaced} replaced)."


def _bash(ctx: ToolContext, args: dict[str, Any]) -> str:
    asked = int(args.get("timeout", BASH_DEFAULT_MS)) / 1000
    limit = max(0.1, min(asked, TOOLS_TIMEOUT_CAP_S, ctx.remaining()))
    # The output goes through a bounded buffer (#28 R10: 700 MB printed made 2.1 GB here): its
    # head and its tail reach the model, the middle is counted.
    out = Bounded(BASH_OUTPUT_CHARS * 2 // 3, BASH_OUTPUT_CHARS // 3)
    # The command dies with this process even when it is SIGKILLed (#20 point 3): the
    # sandbox's --die-with-parent covers a boxed command; the watchdog an unboxed one.
    watchdog = lifetime.Watchdog()
    try:
        with limits.applied(ctx.limits, own_userns=ctx.box is not None) as bounds:
            argv = bounds.inner(["bash", "-c", args["command"]])
            if ctx.box is not None:
                argv = sandbox.bwrap_argv(ctx.box, argv)
            proc = bounds.popen(
                lifetime.die_with_parent(bounds.outer(argv)),
                cwd=ctx.workdir,
                env={**sandbox.agent_env(ctx.home), **watchdog.env()},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # one process group: a timeout kills the children too
            )
            watchdog.guard(proc.pid)
            assert proc.stdout is not None
            with proc.stdout:
                finished = bounded.drain_and_wait(proc, {proc.stdout: out}, limit)
                if not finished:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    bounded.drain({proc.stdout: out}, time.monotonic() + KILLED_DRAIN_S)
            proc.wait()
    finally:
        watchdog.close()
    output = out.text("\n… ({dropped} more bytes left out) …\n")
    if not finished:
        raise ToolFailure(f"Command timed out after {limit:.0f} s\n{output}")
    if proc.returncode != 0:
        raise ToolFailure(f"{output}\nExit code {proc.returncode}")
    return output or "(no output)"


_STR = {"type": "string"}
_INT = {"type": "integer"}
_PATH = {"type": "string", "description": "Absolute path of the file"}

# fmt: off
TOOLS: dict[str, ToolContract] = {
    t.name: t
    for t in (
        ToolContract(
            "Read", "read-only", True, 30.0,
            "Read a text file; lines come numbered. offset: first line (1-based); limit: lines.",
            {"file_path": _PATH, "offset": _INT, "limit": _INT},
            ("file_path",), _read,
        ),
        ToolContract(
            "Glob", "read-only", True, 60.0,
            "Find files by glob pattern (e.g. **/*.py) under path (default: the working "
            "directory), newest first.",
            {"pattern": _STR, "path": _STR},
            ("pattern",), _glob,
        ),
        ToolContract(
            "Grep", "read-only", True, 60.0,
            "Search file contents with a regular expression under path (default: the working "
            "directory). glob filters file names; output_mode 'content' shows matching lines, "
            "otherwise matching files are listed.",
            {"pattern": _STR, "path": _STR, "glob": _STR, "output_mode": _STR},
            ("pattern",), _grep,
        ),
        ToolContract(
            "Write", "writes-file", False, 30.0,
            "Create or overwrite a file inside the writable folder.",
            {"file_path": _PATH, "content": _STR},
            ("file_path", "content"), _write, path_arg="file_path",
        ),
        ToolContract(
            "Edit", "writes-file", False, 30.0,
            "Replace old_string with new_string in a file inside the writable folder; "
            "old_string must be unique unless replace_all is true.",
            {"file_path": _PATH, "old_string": _STR, "new_string": _STR,
             "replace_all": {"type": "boolean"}},
            ("file_path", "old_string", "new_string"), _edit, path_arg="file_path",
        ),
        ToolContract(
            "Bash", "external", False, TOOLS_TIMEOUT_CAP_S,
            "Run a bash command in the working directory. timeout in milliseconds "
            f"(default {BASH_DEFAULT_MS}, at most {int(TOOLS_TIMEOUT_CAP_S * 1000)}).",
            # ``description``: the claude CLI's Bash takes a few words saying what the command
            # is for, and models trained on it send them; refusing the call for it would leave
            # the command unrun while the model reads on as if it had run (#31 item 8).
            {"command": _STR, "timeout": _INT,
             "description": {"type": "string", "description": "What the command is for, in "
                             "a few words (shown, not run)."}},
            ("command",), _bash,
        ),
    )
}
# fmt: on
