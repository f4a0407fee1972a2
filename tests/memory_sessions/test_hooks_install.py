"""`harness init --install-hooks`: prints the hooks, merges them only with --yes, keeps the
user's own settings, and is idempotent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_install_hooks_prints_then_merges_once(
    cli,
    config_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    claude_dir = tmp_path / "claude"
    claude_dir.mkdir()
    settings = claude_dir / "settings.json"
    settings.write_text(json.dumps({"model": "x", "hooks": {"Stop": [{"hooks": []}]}}))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_dir))

    code, out, _ = cli("init", "--install-hooks", "--json")
    assert code == 0
    hooks = json.loads(out)["data"]["claude_hooks"]["hooks"]
    script = hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert script.endswith("cron/hooks/user-prompt-submit.sh") and Path(script).exists()
    assert "UserPromptSubmit" not in json.loads(settings.read_text())["hooks"]  # not without --yes

    assert cli("init", "--install-hooks", "--yes")[0] == 0
    merged = json.loads(settings.read_text())
    assert merged["model"] == "x" and "Stop" in merged["hooks"]
    assert {"SessionStart", "UserPromptSubmit"} <= set(merged["hooks"])

    code, out, _ = cli("init", "--install-hooks", "--yes", "--json")
    assert json.loads(out)["skipped"][-1].startswith("the session-sync hooks are already")
    assert json.loads(settings.read_text()) == merged
