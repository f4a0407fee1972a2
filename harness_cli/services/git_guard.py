"""What a git command of the harness may take from the repository it runs in: data, never code.

An agent writes its worktree, and through git its objects and refs; a linked worktree's ``.git``
is a one-line file naming the git dir. Were git free to follow it, an agent-built git dir with
``core.fsmonitor`` (or a hook, a filter, a ``gpg.program``) would run the agent's script on the
host, in the harness's own process tree, at the harness's next ``git status`` (#28 R1). So every
git command the harness runs gets:

- an environment built from :data:`PASSED_ENV` only — what git needs to find its config, the
  operator's SSH agent and proxies; never a token of the harness;
- :data:`NEUTRAL_CONFIG` on its command line (the highest precedence git has): no hook, no
  fsmonitor, no ``ext::`` transport, whatever any config file says;
- for a linked worktree, :func:`verify_link` before each command: the ``.git`` file is a plain
  file naming a git dir whose back-pointer names this worktree, inside a common dir outside the
  worktree, and the config files git will read hold only the keys of :data:`ALLOWED_KEYS` — a
  key that runs something (``core.fsmonitor``, ``filter.*``, ``include.path``, ``extensions.*``
  but ``worktreeConfig`` …) was written by someone else, and the command is refused.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import stat
import subprocess
from pathlib import Path

from harness_cli.errors import ServiceError

PASSED_ENV = (
    "PATH", "HOME", "USER", "LOGNAME", "TZ", "TMPDIR",
    "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM",
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
    "SSH_AUTH_SOCK", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_SSH_VARIANT", "GIT_ASKPASS",
    "SSH_ASKPASS", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "SSL_CERT_FILE", "SSL_CERT_DIR",
    "CURL_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy",
)  # fmt: skip
"""The only variables of the harness's environment a git command sees: its config's location,
the commit identity a test or an operator pins, the operator's SSH agent, CA bundle and proxy.
Credentials come from the operator's git config (a credential helper, an SSH key), never from
the harness's tokens. The system config (``/etc/gitconfig``) stays on unless the operator set
``GIT_CONFIG_NOSYSTEM``: it is root's, no agent writes it, and a site's proxy or CA is there."""

NEUTRAL_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "protocol.ext.allow=never",
)
"""``-c`` pairs on every command: they beat every config file, so no hook and no fsmonitor
runs and no ``ext::`` URL starts a program, whatever a repository's config says."""

ALLOWED_KEYS = (
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
    "core.ignorecase", "core.precomposeunicode", "core.symlinks",
    "extensions.worktreeconfig", "gc.auto",
    "remote.*.url", "remote.*.fetch", "remote.*.pushurl",
    "branch.*.remote", "branch.*.merge", "user.name", "user.email",
    "lfs.repositoryformatversion",
)  # fmt: skip
"""The keys a worktree's config files may hold (``git config --list`` spelling): what
``worktrees.create`` and git itself (and git-lfs, with the filters of the operator's own config)
write there. Anything else was put there by someone else: what the operator wants git to do
(a credential helper, an SSH command) belongs in their global git config."""

HISTORY_FILES = ("shallow", "info/grafts")
"""Files in a common dir that change what history git shows (a commit cut off from its
parents hides them from a scan): the harness never makes them in a worktree's repository."""


class TamperedRepo(ServiceError):
    """A worktree's git files are not the ones the harness made: no git command runs there."""


def env() -> dict[str, str]:
    """The whole environment of a harness git command."""
    found = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    found.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    # C locale: the rejection and conflict lines we parse are the untranslated ones.
    found.update(LC_ALL="C", LANGUAGE="C")
    # Never wait for a human: no credential prompt, no editor for merge/rebase messages.
    found.update(GIT_TERMINAL_PROMPT="0", GIT_EDITOR="true", GIT_MERGE_AUTOEDIT="no")
    return found


def neutral_args() -> list[str]:
    return [a for pair in NEUTRAL_CONFIG for a in ("-c", pair)]


def _refuse(worktree: Path, what: str) -> TamperedRepo:
    return TamperedRepo(
        f"refusing to run git in {worktree}: {what}",
        hint="something changed the worktree's git files (an agent?) and nothing ran there; "
        f"inspect it, then delete the folder {worktree}: the next run makes a new one from the "
        "case's branch",
    )


def read_link(worktree: Path) -> Path | None:
    """The git dir a worktree's ``.git`` file names; None when ``.git`` is a folder (a plain
    repository). Raises :class:`TamperedRepo` for a symlink, a device, or a file that names
    no absolute git dir."""
    link = worktree / ".git"
    try:
        info = os.lstat(link)
    except FileNotFoundError:
        raise _refuse(worktree, f"{link} is missing") from None
    if stat.S_ISDIR(info.st_mode):
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > 4096:
        raise _refuse(worktree, f"{link} is not a plain file")
    text = link.read_text(encoding="utf-8", errors="replace").strip()
    target = Path(text.removeprefix("gitdir:").strip())
    if not text.startswith("gitdir:") or not target.is_absolute() or "\n" in text:
        raise _refuse(worktree, f"{link} does not name a git dir ({text[:80]!r})")
    return target


def verify_link(worktree: Path, gitdir: Path, common: Path | None = None) -> Path:
    """Check a linked worktree's git files before a command; return its common dir.

    ``gitdir``: the git dir the ``.git`` file must name. ``common``: the common dir it must
    belong to (None: the one its ``commondir`` names, which must lie outside the worktree)."""
    named = read_link(worktree)
    if named is None or Path(os.path.abspath(named)) != Path(os.path.abspath(gitdir)):
        raise _refuse(worktree, f"its .git names {named}, not the git dir {gitdir}")
    try:
        back = (gitdir / "gitdir").read_text(encoding="utf-8").strip()
        pointed = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise _refuse(worktree, f"{gitdir} is not a worktree's git dir ({exc.strerror})") from None
    if os.path.realpath(back) != os.path.realpath(worktree / ".git"):
        raise _refuse(worktree, f"{gitdir} belongs to {back}, not to this worktree")
    found = Path(os.path.realpath(gitdir / pointed))
    real_wt = Path(os.path.realpath(worktree))
    if common is not None and found != Path(os.path.realpath(common)):
        raise _refuse(worktree, f"{gitdir} belongs to the repository {found}, not {common}")
    if found.is_relative_to(real_wt) or gitdir.resolve().parent != found / "worktrees":
        raise _refuse(worktree, f"{gitdir} is not a worktree git dir of a repository outside it")
    for name in HISTORY_FILES:
        if os.path.lexists(found / name):
            raise _refuse(worktree, f"{found / name} exists (it would hide history)")
    check_config(worktree, found / "config")
    check_config(worktree, gitdir / "config.worktree")
    return found


_CHECKED: set[str] = set()
"""Digests of config files already found clean: a digest is checked once per process."""


def check_config(worktree: Path, path: Path) -> None:
    """Refuse when the config file ``path`` holds a key outside :data:`ALLOWED_KEYS`."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(worktree, f"{path} is not a plain file")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest in _CHECKED:
        return
    # git's own parser (includes are not followed with --file): what it reads is what we check
    proc = subprocess.run(
        ["git", "config", "--file", str(path), "--null", "--name-only", "--list"],
        capture_output=True,
        env=env(),
        cwd="/",
        timeout=30,
        check=False,
    )
    if proc.returncode != 0:
        raise _refuse(worktree, f"{path} is not a config git can read")
    keys = {k.decode("utf-8", "replace") for k in proc.stdout.split(b"\0") if k}
    foreign = sorted(k for k in keys if not _allowed(k))
    if foreign:
        raise _refuse(
            worktree, f"{path} sets {', '.join(foreign[:5])}, which the harness never does"
        )
    _CHECKED.add(digest)


def _allowed(key: str) -> bool:
    section, _, rest = key.partition(".")
    if "." in rest:  # section.subsection.name: the subsection keeps its case
        sub, _, name = rest.rpartition(".")
        key = f"{section.lower()}.{sub}.{name.lower()}"
    else:
        key = key.lower()
    return any(fnmatch.fnmatchcase(key, pattern) for pattern in ALLOWED_KEYS)
