"""The box every agent command runs in (#17 p1): its processes see the worktree read-write, a
scratch HOME, the toolchain read-only, and nothing else — no ``$HARNESS_HOME``, agent-config,
workspace, other worktrees, ``~/.ssh``, parent ``/proc``, no token in the environment and no
network unless the project allows it.

One ``View`` says what is visible; two backends apply it: bubblewrap directly (the harness's
own tool loop's Bash and the acceptance checks, ``bwrap_argv``) and the claude CLI's own
bubblewrap sandbox for its Bash (``claude_settings``; it needs socat for its network proxy).
Fail closed: with no working sandbox, a run that would get a shell is refused unless
harness.yaml says ``sandbox.required: false`` (then it runs unboxed, with a warning each time).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from harness_cli import redaction
from harness_cli.agents import policy
from harness_cli.agents.sandbox_settings import SandboxSettings
from harness_cli.errors import HarnessError, PolicyRefused
from harness_cli.logs import event
from harness_cli.services import git_guard

log = logging.getLogger("harness.agents.sandbox")

SYSTEM_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
ETC_ENTRIES = (
    "passwd", "group", "hosts", "host.conf", "resolv.conf", "nsswitch.conf", "ld.so.cache",
    "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "ssl", "ca-certificates",
    "alternatives", "gitconfig", "mime.types", "os-release", "debian_version", "services",
    "protocols", "bash.bashrc", "profile", "inputrc", "terminfo", "python3", "pip.conf",
)  # fmt: skip
"""Only these of /etc: the rest (shadow, machine secrets, service configs) is not toolchain."""
PROBE_TIMEOUT_S = 10.0
INSTALL_HINT = "install it (apt-get install bubblewrap socat)"


@dataclass(frozen=True)
class View:
    """What an agent's processes see."""

    cwd: Path
    writable: tuple[Path, ...]
    readable: tuple[Path, ...]
    """Read-only, besides the toolchain."""
    pinned: tuple[Path, ...] = ()
    """Inside a writable folder and still read-only (a worktree's ``.git`` link, its git
    config): a change there would run code outside the box at the harness's next git call."""
    home: Path = Path("/nonexistent")
    network: bool = False
    toolchain: tuple[Path, ...] = field(default_factory=tuple)
    mounted: tuple[tuple[Path, Path], ...] = ()
    """(folder, where the box sees it) read-write: acceptance's clean checkout, seen at the
    worktree's path (bubblewrap only)."""


def toolchain(extra: Sequence[str] = (), *, worktrees: Path) -> tuple[Path, ...]:
    """The read-only folders commands need: the system's, the interpreters on PATH (a PATH
    entry ``…/bin`` or ``…/shims`` brings its prefix), the harness's Python and ``extra``.
    Never one that holds a forbidden folder or the home itself, nor one inside them."""
    candidates: list[Path] = [Path(p) for p in SYSTEM_ROOTS]
    candidates += [Path("/etc") / name for name in ETC_ENTRIES]
    candidates += [Path(sys.prefix), Path(sys.base_prefix)]
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry.startswith("/"):
            folder = Path(entry)
            candidates.append(folder.parent if folder.name in ("bin", "sbin", "shims") else folder)
    candidates += [Path(p).expanduser() for p in extra]
    forbidden = policy.forbidden_roots(worktrees)
    home = Path(os.path.realpath(Path.home()))
    kept: list[Path] = []
    for candidate in candidates:
        if not os.path.lexists(candidate):
            continue
        real = Path(os.path.realpath(candidate))
        holds = [f for f in (*forbidden, home) if f.is_relative_to(real)]
        inside = [f for f in forbidden if real.is_relative_to(f)]
        if not holds and not inside:
            kept.append(candidate)
    return tuple(dict.fromkeys(kept))


def git_view(worktree: Path) -> tuple[list[Path], list[Path], list[Path]]:
    """(writable, pinned, readable) that git needs in a linked worktree: its own git dir and its
    repository's objects, refs and logs (commits, rebases) writable; the rest of the repository
    (config, hooks, HEAD, packed-refs, info/, other worktrees' git dirs) and the files naming
    where the git dir is, pinned read-only — for the claude CLI's sandbox too, which otherwise
    lets a worktree write its whole common dir (#28 R7); the mirror whose objects it borrows,
    read-only. A ``.git`` file that does not name a git dir of a repository that names it
    back gets no git access at all."""
    link = worktree / ".git"
    if link.is_dir() and not link.is_symlink():  # a plain repo: its config and hooks stay ours
        return [], [link / "config", link / "hooks", link / "info"], []
    try:
        gitdir = git_guard.read_link(worktree)
        back = (gitdir / "gitdir").read_text(encoding="utf-8").strip() if gitdir else ""
        pointed = (gitdir / "commondir").read_text(encoding="utf-8").strip() if gitdir else ""
    except (HarnessError, OSError):
        return [], [link], []
    if gitdir is None or os.path.realpath(back) != os.path.realpath(link):
        return [], [link], []
    common = Path(os.path.realpath(gitdir / pointed))
    if Path(os.path.realpath(gitdir)).parent != common / "worktrees":
        return [], [link], []
    if (common / "objects").is_dir():
        # git makes logs/ at its first reflog write; made now, every run gets the same view
        # (the claude CLI prints the view into its Bash tool's definition: a prompt prefix)
        with contextlib.suppress(OSError):
            (common / "logs").mkdir(exist_ok=True)
    writable = [gitdir, *(common / name for name in _GIT_WRITABLE)]
    pinned = [link, *(gitdir / name for name in ("commondir", "gitdir", "config.worktree"))]
    pinned += _common_pins(common, gitdir)
    alternates = common / "objects" / "info" / "alternates"
    borrowed = [Path(line) for line in _lines(alternates) if line.startswith("/")]
    return (
        [p for p in writable if p.exists()],
        [p for p in pinned if p.exists()],
        [common, *(p for p in borrowed if p.is_dir())],
    )


_GIT_WRITABLE = ("objects", "refs", "logs")


def _common_pins(common: Path, gitdir: Path) -> list[Path]:
    """Everything of the common dir an agent may not write: each entry but objects, refs, logs
    and worktrees; each other worktree's git dir; the alternates file naming the mirror. (A
    name that does not exist yet cannot be pinned in the claude CLI's sandbox — it turns it
    into an unreadable file — so :mod:`case_repos` makes ``packed-refs`` up front and
    ``git_guard`` refuses a repository with a ``shallow`` file.)"""
    try:
        entries = sorted(common.iterdir())
        others = sorted((common / "worktrees").iterdir())
    except OSError:
        entries, others = [], []
    keep = {*_GIT_WRITABLE, "worktrees"}
    pins = [e for e in entries if e.name not in keep]
    pins += [o for o in others if o.name != gitdir.name]
    pins.append(common / "objects" / "info" / "alternates")
    return pins


def _lines(path: Path) -> list[str]:
    try:
        return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    except OSError:
        return []


def view_for(
    cwd: Path,
    writable: Sequence[Path],
    readable: Sequence[Path],
    home: Path,
    *,
    network: bool = False,
    extra_toolchain: Sequence[str] = (),
    worktrees: Path | None = None,
) -> View:
    """The view of a run in ``cwd`` that may change ``writable`` and read ``readable``;
    ``worktrees``: the configured worktrees' folder (default: ``policy.default_worktrees()``),
    which no toolchain folder may show."""
    rw: list[Path] = [Path(p) for p in writable]
    pinned: list[Path] = []
    ro: list[Path] = [Path(p) for p in readable]
    for folder in dict.fromkeys(rw):
        git_rw, git_pinned, git_ro = git_view(folder)
        rw += git_rw
        pinned += git_pinned
        ro += git_ro
    return View(
        cwd=cwd,
        writable=tuple(dict.fromkeys(rw)),
        readable=tuple(dict.fromkeys(ro)),
        pinned=tuple(dict.fromkeys(pinned)),
        home=home,
        network=network,
        toolchain=toolchain(extra_toolchain, worktrees=worktrees or policy.default_worktrees()),
    )


def agent_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of an agent's command (and of the checks): no variable of the
    harness's own, and none that holds a secret's value, whatever its name (#28 R3)."""
    env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TZ") if k in os.environ}
    env = redaction.without_secrets(env)
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(
        HOME=str(home), TMPDIR="/tmp", TERM="dumb", GIT_TERMINAL_PROMPT="0",
        PYTHONDONTWRITEBYTECODE="1",
    )  # fmt: skip
    env.update(extra or {})
    return env


# -- bubblewrap -------------------------------------------------------------------------------


def bwrap_argv(view: View, argv: Sequence[str], *, bwrap: str = "bwrap") -> list[str]:
    """``bwrap … -- argv``: new namespaces (pid, ipc, uts, user, net unless allowed), its own
    /proc, /dev and /tmp, the view's folders bound from the outermost in, then the pins."""
    args = [bwrap, "--die-with-parent", "--new-session", "--unshare-all"]
    if view.network:
        args.append("--share-net")
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    mounts: list[tuple[Path, str]] = [(p, "--ro-bind") for p in (*view.toolchain, *view.readable)]
    mounts += [(p, "--bind") for p in (*view.writable, view.home)]
    mounts.sort(key=lambda m: len(Path(os.path.abspath(m[0])).parts))
    mounts += [(p, "--ro-bind") for p in view.pinned]
    for path, how in mounts:
        if path.is_symlink() and path.parent == Path("/"):  # /bin → usr/bin (merged /usr)
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.exists():
            args += [how, str(path), str(path)]
    for source, seen in view.mounted:
        args += ["--bind", str(source), str(seen)]
    args += ["--chdir", str(view.cwd), "--", *argv]
    return args


_PROBED: dict[tuple[str, str], str | None] = {}


def problem(runtime: str) -> str | None:
    """Why no sandbox can run on this machine for ``runtime`` (None: it works). Probed once per
    process: a real ``bwrap`` run, and socat for the claude CLI's network proxy."""
    key = (runtime, os.environ.get("PATH", ""))
    if key not in _PROBED:
        _PROBED[key] = _probe(runtime)
    return _PROBED[key]


def _probe(runtime: str) -> str | None:
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap (bwrap) is not installed"
    probe = [exe, "--die-with-parent", "--unshare-all", "--ro-bind", "/", "/"]
    probe += ["--proc", "/proc", "--dev", "/dev", "/bin/sh", "-c", ":"]
    try:
        proc = subprocess.run(
            probe, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap does not run here: {exc}"
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        return f"bubblewrap cannot create namespaces here: {detail}"
    if runtime == "claude-code" and shutil.which("socat") is None:
        return "socat is not installed (the claude CLI's sandbox needs it for its network proxy)"
    return None


def required_box(runtime: str, settings: SandboxSettings, role: str) -> bool:
    """Whether a run with a shell gets the sandbox: yes when it works; with none, refused —
    unless the operator opted out, which runs it unboxed and says so every time."""
    found = problem(runtime)
    if found is None:
        return True
    if settings.required:
        raise PolicyRefused(
            f"no working sandbox for the {role} run's commands: {found}",
            hint=f"{INSTALL_HINT}; `harness doctor` checks it. To run agent commands "
            "UNSANDBOXED instead, set sandbox.required: false in harness.yaml",
        )
    event(log, "sandbox_disabled", logging.WARNING, role=role, why=found)
    log.warning("the %s run's commands run UNSANDBOXED: %s (sandbox.required: false)", role, found)
    return False


@contextlib.contextmanager
def scratch(stable: str | None = None) -> Iterator[Path]:
    """A private folder for one run (its ``home/`` is the agent's HOME), removed afterwards.

    ``stable`` (a name, e.g. a digest of the worktree's path) asks for the same path every
    time: the claude CLI writes its sandbox's folders into its Bash tool's definition, so a new
    folder per run made every run's prompt a new prefix for the cache (#22)."""
    with private_folder(stable, prefix="harness-agent-") as folder:
        (folder / "home").mkdir()
        yield folder


@contextlib.contextmanager
def private_folder(stable: str | None, *, prefix: str) -> Iterator[Path]:
    """An empty folder only this user can enter, removed afterwards.

    With a ``stable`` name it is the same path every time (#22: a path the model is shown is
    part of the prompt's prefix, and a new one per run is a new prefix for the cache). That
    folder lives in a parent only this user can enter and is held with flock while in use;
    when it is held (a concurrent run with the same name) or the parent is not safe, a fresh
    ``mkdtemp`` folder is made instead: a cache miss, never a shared folder."""
    held = _claim(stable) if stable else None
    try:
        if held is None:
            folder = Path(tempfile.mkdtemp(prefix=prefix))
        else:
            folder = Path(held.name).with_suffix("")
            shutil.rmtree(folder, ignore_errors=True)  # a killed run's leftovers
            folder.mkdir(mode=0o700)
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        if held is not None:
            held.close()  # releases the flock; the empty lock file stays for the next run


def _claim(name: str) -> IO[str] | None:
    """``<private parent>/<name>.lock``, opened and locked; None when it cannot be had."""
    parent = Path(tempfile.gettempdir()) / f"harness-agent-{os.getuid()}"
    try:
        parent.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(parent)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None  # someone else's folder, or one others may enter: not a safe place
    try:
        lock = (parent / f"{name}.lock").open("a", encoding="utf-8")
    except OSError:
        return None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return None
    return lock


# -- the claude CLI's own sandbox -------------------------------------------------------------


def claude_settings(view: View, domains: Sequence[str], key_helper: str | None) -> dict[str, Any]:
    """``--settings`` for the claude CLI: its Bash sandbox on, failing closed, reading only the
    view (``denyRead: /`` then ``allowRead``), writing the view's writable folders, reaching only
    ``domains``; the API key comes from ``key_helper`` so it is in no environment."""
    readable = [*view.toolchain, *view.readable, *view.writable, view.home]
    settings: dict[str, Any] = {
        "sandbox": {
            "enabled": True,
            "failIfUnavailable": True,
            "autoAllowBashIfSandboxed": True,
            "allowUnsandboxedCommands": False,
            "filesystem": {
                "denyRead": ["/"],
                "allowRead": [str(p) for p in dict.fromkeys(readable)],
                "allowWrite": [str(p) for p in dict.fromkeys((*view.writable, view.home))],
                "denyWrite": [str(p) for p in view.pinned],
            },
            "network": {"allowedDomains": list(domains)},
        },
    }
    if key_helper:
        settings["apiKeyHelper"] = key_helper
    return settings
