"""Where the claude CLI is: ``HARNESS_CLAUDE_BIN``, then the project-local install made by
``make claude-cli`` (``.tools/claude``), then ``PATH``."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

PINNED_VERSION = "2.1.197"
"""The newest release that declares support for node 20 (CLAUDE-CLI-FACTS.md)."""


def find_claude() -> Path | None:
    explicit = os.environ.get("HARNESS_CLAUDE_BIN")
    if explicit:
        return Path(explicit) if Path(explicit).exists() else None
    local = Path(__file__).resolve().parents[2] / ".tools/claude/node_modules/.bin/claude"
    if local.exists():
        return local
    found = shutil.which("claude")
    return Path(found) if found else None


def offline_env(base_url: str, home: Path, api_key: str = "sk-ant-sandbox") -> dict[str, str]:
    """The environment that keeps the real CLI offline against the sandbox's Messages API."""
    return {
        "IS_SANDBOX": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": api_key,
        "HOME": str(home),
    }
