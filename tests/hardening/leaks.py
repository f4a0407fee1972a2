"""Find secrets where they must never be: every byte under a folder (git objects decompressed),
every request the harness sent to an emulator (its own credentials in the auth header aside),
and what a command printed."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

AUTH_HEADERS = frozenset({"authorization", "private-token", "x-api-key"})
"""Where a credential belongs: the request that authenticates with it."""


def _git_dirs(root: Path) -> list[Path]:
    found = []
    for head in root.rglob("HEAD"):
        folder = head.parent
        if (folder / "objects").is_dir() and (folder / "refs").exists():
            found.append(folder)
    return found


def git_objects(git_dir: Path) -> bytes:
    """Every object of a repository, decompressed (loose and packed alike)."""
    proc = subprocess.run(
        ["git", f"--git-dir={git_dir}", "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=False,
    )
    return proc.stdout


def scan_tree(root: Path, needles: Iterable[str], *, allowed: Iterable[Path] = ()) -> list[str]:
    """``path: needle`` for each needle found in a file under ``root`` or in a git object."""
    wanted = [n.encode() for n in needles]
    skip = {p.resolve() for p in allowed}
    hits: list[str] = []
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file() or path.resolve() in skip:
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        hits += [f"{path}: {n.decode()}" for n in wanted if n in data]
    for git_dir in _git_dirs(root):
        data = git_objects(git_dir)
        hits += [f"{git_dir} (git objects): {n.decode()}" for n in wanted if n in data]
    return hits


def scan_requests(emulators: dict[str, Any], needles: Iterable[str]) -> list[str]:
    wanted = [n.encode() for n in needles]
    hits: list[str] = []
    for name, emu in emulators.items():
        for req in list(emu.requests):
            headers = {k: v for k, v in req.headers.items() if k.lower() not in AUTH_HEADERS}
            data = b"\n".join(
                [req.path.encode(), repr(req.query).encode(), repr(headers).encode(), req.body]
            )
            hits += [f"{name} {req.method} {req.path}: {n.decode()}" for n in wanted if n in data]
    return hits


def scan_text(label: str, text: str, needles: Iterable[str]) -> list[str]:
    return [f"{label}: {n}" for n in needles if n in text]
