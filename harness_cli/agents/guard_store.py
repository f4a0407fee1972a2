"""The guard's snapshots on disk, so that a run killed mid-way is still reverted.

``guard.guarded`` holds its snapshot in memory and reverts when the run ends — which a SIGKILL
of the harness skips. So each snapshot is also written to ``$HARNESS_HOME/guards/``: a manifest
per run (who runs it, the trees, each file's stat and the digest of its bytes, the agent's
process group once started) and the bytes themselves, stored once by digest under ``blobs/``
(the SOPs and the config are the same run after run). A finished run deletes its manifest; the
next run on any case finds the manifests of dead runs, kills what is left of their agents and
reverts from them (:func:`repair`), exactly as the dead run would have.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import uuid
from pathlib import Path
from typing import Any

from harness_cli import paths
from harness_cli.agents import guard, lifetime
from harness_cli.logs import event
from harness_cli.state.dedup import is_alive, me
from harness_cli.state.store import atomic_write_bytes, atomic_write_text

log = logging.getLogger("harness.agents.guard")


def root() -> Path:
    return paths.home() / "guards"


def keep(snap: guard.Snapshot) -> Path:
    """Write ``snap`` to disk; returns its manifest."""

    blobs = root() / "blobs"
    manifest: dict[str, Any] = {
        "owner": me(),
        "allowed_root": str(snap.allowed_root),
        "roots": [str(r) for r in snap.roots],
        "dirs": sorted(str(d) for d in snap.dirs),
        "files": {str(p): _entry(e, blobs) for p, e in snap.files.items()},
        "pinned": {str(p): _entry(e, blobs) for p, e in snap.pinned.items()},
        "process": None,
    }
    path = root() / f"{uuid.uuid4().hex}.json"
    atomic_write_text(path, json.dumps(manifest), verbatim=True)
    return path


def note_process(path: Path, pid: int, started: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_bytes())
        data["process"] = {"pgid": pid, "started": started}
        atomic_write_text(path, json.dumps(data), verbatim=True)


def discard(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def repair(case_id: str = "") -> list[str]:
    """Revert from every snapshot whose run is dead; returns what was put back."""

    reverted: list[str] = []
    try:
        manifests = sorted(root().glob("*.json"))
    except OSError:
        return reverted
    for path in manifests:
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        if is_alive(str(data.get("owner", ""))):
            continue  # a live run: its own revert comes
        process = data.get("process") or {}
        if lifetime.kill_group_if_same(
            int(process.get("pgid") or 0), str(process.get("started") or "")
        ):
            event(log, "orphan_agent_killed", logging.WARNING, pgid=process.get("pgid"))
        snap = _load(data)
        put_back = guard.revert_outside(snap.allowed_root, snap)
        reverted += put_back
        discard(path)
        event(
            log,
            "guard_repaired",
            logging.WARNING,
            case_id=case_id,
            paths=put_back,
            manifest=path.name,
        )
    return reverted


def _entry(entry: Any, blobs: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"mode": entry.mode, "size": entry.size, "mtime_ns": entry.mtime_ns}
    if entry.link is not None:
        out["link"] = entry.link
    elif entry.data is not None:
        digest = hashlib.sha256(entry.data).hexdigest()
        blob = blobs / digest
        if not blob.exists():
            atomic_write_bytes(blob, entry.data, verbatim=True)
        out["blob"] = digest
    return out


def _load(data: dict[str, Any]) -> guard.Snapshot:
    blobs = root() / "blobs"
    snap = guard.Snapshot(
        allowed_root=Path(data["allowed_root"]), roots=tuple(Path(r) for r in data["roots"])
    )
    snap.dirs = {Path(d) for d in data.get("dirs", [])}
    for key, target in (("files", snap.files), ("pinned", snap.pinned)):
        for name, raw in (data.get(key) or {}).items():
            blob = raw.get("blob")
            body = None
            if blob:
                with contextlib.suppress(OSError):
                    body = (blobs / blob).read_bytes()
            target[Path(name)] = guard._Entry(
                raw["mode"], raw["size"], raw["mtime_ns"], data=body, link=raw.get("link")
            )
    return snap


def prune_blobs() -> int:
    """Forget blobs no manifest refers to (run now and then: they are shared)."""
    referenced: set[str] = set()
    for path in root().glob("*.json"):
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(path.read_bytes())
            for key in ("files", "pinned"):
                referenced |= {e.get("blob") for e in (data.get(key) or {}).values()} - {None}
    removed = 0
    for blob in (root() / "blobs").glob("*"):
        if blob.name not in referenced:
            with contextlib.suppress(OSError):
                os.unlink(blob)
                removed += 1
    return removed
