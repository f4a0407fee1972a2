"""#28 R3: every credential of the env file is a secret by its value, whatever its name.

The red team put ``AWS_SECRET_ACCESS_KEY`` and ``DD_APP_KEY`` in the env file (cron exports it):
neither name ends in _TOKEN/_SECRET/_API_KEY/_PASSWORD, so the required checks ran with both in
their environment, a failing check printed them, and from its output they reached the model,
the MR description, the repository and the workspace remote. End to end on the sandbox: a
dev-agent task whose second required check prints its environment and fails.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from harness_cli.sandbox.runner import SANDBOX_TOKENS
from tests.delivery.desk import Desk

pytestmark = pytest.mark.slow

AWS = "wJalrXUtnFEMIxK7MDENGxbPxRfiCYzEXAMPLE0r3d"
DATADOG = "8c1f0f5e2d7b4a9e6f3c1b0a9d8e7f6a5b4c3d2e"
PRINT_ENV = (
    "python -c \"import os, sys; [print(k + '=' + v) for k, v in sorted(os.environ.items())]; "
    "print('FAILED config', os.environ.get('AWS_SECRET_ACCESS_KEY'), "
    "os.environ.get('DD_APP_KEY')); sys.exit(1)\""
)


def _everything_written(root: Path) -> str:
    """Every file under ``root`` and every object of every git repository there."""
    parts: list[str] = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if not path.is_symlink():
                parts.append(path.read_bytes().decode("utf-8", "replace"))
        if Path(folder).name == ".git" or (Path(folder) / "objects").is_dir():
            proc = subprocess.run(
                ["git", "--git-dir", folder, "cat-file", "--batch-all-objects", "--batch"],
                capture_output=True, check=False,
            )  # fmt: skip
            parts.append(proc.stdout.decode("utf-8", "replace"))
    return "\n".join(parts)


def test_env_file_credentials_never_reach_a_check_nor_leave(
    desk: Desk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = desk.home / "env"
    env_file.write_text(
        "".join(f"export {k}={v}\n" for k, v in SANDBOX_TOKENS.items())
        + f"export AWS_SECRET_ACCESS_KEY={AWS}\nDD_APP_KEY='{DATADOG}'\n"
    )
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS)  # harness-cron exports the file
    monkeypatch.setenv("DD_APP_KEY", DATADOG)
    projects = tmp_path / "agent-config" / "projects.yaml"
    data = yaml.safe_load(projects.read_text())
    data["projects"]["team-a"]["required_checks"].append(PRINT_ENV)
    projects.write_text(yaml.safe_dump(data, sort_keys=False))
    desk.force_ci("success", times=3)
    desk.approved_case("ENV-1")

    result = desk.task("ENV-1", expect=None)

    record = json.loads(
        (tmp_path / "workspace" / "control" / "ENV-1" / "acceptance" / "latest.json").read_text()
    )
    [printing] = [c for c in record["checks"] if "FAILED config" in c["stdout_tail"]]
    assert "FAILED config None None" in printing["stdout_tail"]  # the check never had them
    assert "HOME=" in printing["stdout_tail"] and "GITLAB_TOKEN" not in printing["stdout_tail"]
    assert result["data"].get("mr"), result  # the run went as far as an MR (a draft)
    asked = desk.box.anthropic.recorded()
    seen = {
        "model": "\n".join(r.body.decode("utf-8", "replace") for r in asked),
        "gitlab": json.dumps(desk.box.gitlab.snapshot()),
        "slack": json.dumps(desk.box.slack.snapshot()),
        "files": _everything_written(tmp_path / "workspace")
        + _everything_written(desk.bare())
        + _everything_written(desk.home / "logs"),
    }
    for where, text in seen.items():
        for secret in (AWS, DATADOG):
            assert secret not in text, f"{secret[:6]}… reached {where}"
