"""The small traps of a first week (#34 item 15), met from a shell: a stray byte in the config,
a mistyped command line, `status` after the operator's own typos and with a case file nobody
can read. Each is run as a process, the way the operator meets it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import harness_subprocess


@pytest.mark.parametrize("name", ["harness.yaml", "projects.yaml"])
def test_a_non_utf8_byte_in_the_config_is_bad_input_with_its_line(
    config_dir: Path, name: str
) -> None:
    path = config_dir / name
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].rstrip(b"\n") + b"  # caf\xe9\n"  # a Latin-1 editor's é
    path.write_bytes(b"".join(lines))
    code, _, err = harness_subprocess("status")
    assert code == 2, err
    assert f"{path}:3" in err and "UTF-8" in err, err
    assert len(err.strip().splitlines()) == 1 and "bug" not in err, err
    code, checks, _ = _doctor()
    assert checks["config"]["status"] == "fail" and f"{path}:3" in checks["config"]["detail"]


def _doctor() -> tuple[int, dict[str, Any], str]:
    code, out, err = harness_subprocess("doctor", "--offline", "--json")
    return code, {c["name"]: c for c in json.loads(out)["data"]}, err


@pytest.mark.parametrize(
    "argv",
    [
        ["case", "list", "--nope"],
        ["investigate", "AAA-1", "extra", "args"],
        ["poll-slack", "--since"],
        ["pause", "--for"],
    ],
)
def test_a_usage_error_is_one_line_and_json_under_json(config_dir: Path, argv: list[str]) -> None:
    code, out, err = harness_subprocess(*argv)
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert "╭" not in err and "harness" in err and "--help" in err, err
    code, out, err = harness_subprocess(*argv, "--json")
    assert code == 2
    body = json.loads(out)
    assert body["ok"] is False and body["error"] == "UsageError" and body["message"], out
    assert len(err.strip().splitlines()) == 1, err


def test_status_does_not_count_the_operators_typos_and_shows_unreadable_cases(
    config_dir: Path, tmp_path: Path
) -> None:
    assert harness_subprocess("init")[0] == 0
    assert harness_subprocess("case", "new", "--project", "team-a", "--id", "AAA-5",
                              "--title", "t", "--text", "-")[0] in (0, 2)  # fmt: skip
    code, _, err = harness_subprocess("admin", "oncal statsu")
    assert code == 2, err
    code, _, err = harness_subprocess("case", "show", "NOPE-404")
    assert code == 2, err
    # a case file nobody can read any more
    broken = tmp_path / "workspace" / "control" / "AAA-9"
    broken.mkdir(parents=True)
    (broken / "case.json").write_text('{"id": "AAA-9", "status": ')
    code, out, err = harness_subprocess("status", "--json")
    assert code == 0, err
    body = json.loads(out)
    assert body["data"]["last_24h"]["errors"] == 0, body["data"]["last_24h"]
    assert [c["id"] for c in body["data"]["unreadable_cases"]] == ["AAA-9"]
    text = "\n".join(body["messages"])
    assert "errors logged" not in text
    assert "unreadable" in text and "AAA-9" in text
    shutil.rmtree(broken)
