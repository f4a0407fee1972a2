"""The claude CLI hooks that sync sessions through the git store (the packaged
``cron/hooks/``), rendered for this installation and merged into ``~/.claude/settings.json``
on request.

Merging adds the harness's hook groups and keeps everything else the user configured; running
it twice changes nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness_cli.errors import InputError
from harness_cli.resources import DEFAULTS
from harness_cli.state.store import atomic_write_json

HOOKS_DIR = DEFAULTS / "cron" / "hooks"
EVENTS = {
    "SessionStart": ("session-start.sh", {"matcher": "startup|resume"}, 30),
    "UserPromptSubmit": ("user-prompt-submit.sh", {}, 60),
}
WORK_SESSION_EVENTS: tuple[tuple[str, str, dict[str, str], int], ...] = (
    ("SessionStart", "session-open.sh", {"matcher": "startup|resume"}, 30),
    ("PreToolUse", "pre-tool-use.sh", {"matcher": "Write|Edit|MultiEdit|NotebookEdit"}, 30),
    ("SessionEnd", "session-end.sh", {}, 30),
)
"""A human's session taking part in work sessions (issue #19): open, ask the gate, close."""


def hook_settings(hooks_dir: Path = HOOKS_DIR) -> dict[str, Any]:
    """The ``hooks`` section pointing at this checkout's scripts."""
    out: dict[str, Any] = {}
    for event, (script, extra, timeout) in EVENTS.items():
        command = {"type": "command", "command": str(hooks_dir / script), "timeout": timeout}
        out[event] = [{**extra, "hooks": [command]}]
    for event, script, extra, timeout in WORK_SESSION_EVENTS:
        command = {"type": "command", "command": str(hooks_dir / script), "timeout": timeout}
        out.setdefault(event, []).append({**extra, "hooks": [command]})
    return {"hooks": out}


def settings_path() -> Path:
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(base) if base else Path.home() / ".claude"


def merge_into(path: Path, wanted: dict[str, Any]) -> bool:
    """Add the harness's hook groups to the settings file at ``path``; False if already there."""
    try:
        current = json.loads(path.read_text()) if path.exists() else {}
    except ValueError:
        raise InputError(f"{path} is not valid JSON", hint="fix it by hand first") from None
    hooks = current.setdefault("hooks", {})
    changed = False
    for event, groups in wanted["hooks"].items():
        existing = hooks.setdefault(event, [])
        commands = {h.get("command") for g in existing for h in g.get("hooks", [])}
        for group in groups:
            if group["hooks"][0]["command"] not in commands:
                existing.append(group)
                changed = True
    if changed:
        atomic_write_json(path, current)
    return changed
