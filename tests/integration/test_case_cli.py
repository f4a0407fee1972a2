"""`harness init` and `harness case …` end to end on a real workspace repo (and a bare remote)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    _git("init", "--bare", "-q", str(bare), cwd=tmp_path)
    return bare


def test_init_is_idempotent_and_doctor_reports(
    cli,
    config_dir: Path,
    remote: Path,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    code, out, err = cli("init", "--remote", str(remote), "--json")
    assert code == 0, err
    first = json.loads(out)
    assert any("workspace repo" in c for c in first["changed"])
    code, out, _ = cli("init", "--json")
    assert code == 0
    assert json.loads(out)["changed"] == []
    code, out, _ = cli("doctor", "--offline", "--json")
    checks = {c["name"]: c for c in json.loads(out)["data"]}
    assert checks["config"]["status"] == "ok"
    assert checks["workspace"]["status"] == "ok"
    assert checks["SLACK_USER_TOKEN"]["status"] == "fail"  # nothing works without it
    assert code == 1


def test_doctor_on_an_empty_machine_fails_with_fixes(cli) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli("doctor", "--offline", "--json")
    assert code == 1
    checks = {c["name"]: c for c in json.loads(out)["data"]}
    assert checks["harness home"]["fix"] == "run `harness init`"
    assert checks["config"]["status"] == "fail"


def test_case_lifecycle_is_committed_and_pushed(
    cli,
    config_dir: Path,
    remote: Path,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    assert cli("init", "--remote", str(remote))[0] == 0
    ticket = tmp_path / "ticket.txt"
    ticket.write_text("Checkout totals are off by a cent — see BBB-42\n")
    code, out, err = cli(
        "case",
        "new",
        "--project",
        "team-a",
        "--title",
        "Totals off",
        "--text",
        str(ticket),
        "--json",
    )
    assert code == 0, err
    data = json.loads(out)["data"]
    assert data["case_id"] == "BBB-42" and data["created"] is True
    case_dir = Path(data["case_dir"])
    assert json.loads((case_dir / "message.json").read_text())["text"].startswith("Checkout")
    # re-running is reported as skipped, not an error
    code, out, _ = cli(
        "case",
        "new",
        "--project",
        "team-a",
        "--title",
        "Totals off",
        "--text",
        str(ticket),
        "--json",
    )
    assert code == 0 and json.loads(out)["skipped"]

    assert (
        cli(
            "case",
            "register-thread",
            "BBB-42",
            "--channel",
            "C0SUPPORT",
            "--thread-ts",
            "1732870000.000100",
        )[0]
        == 0
    )
    tmap = json.loads((tmp_path / "harness-home" / "oncall_thread_map.json").read_text())
    entry = tmap["threads"]["C0SUPPORT/1732870000.000100"]
    assert entry["case_id"] == "BBB-42" and Path(entry["case_dir"]).is_absolute()

    code, out, _ = cli("case", "list", "--json")
    assert [c["id"] for c in json.loads(out)["data"]] == ["BBB-42"]
    code, out, _ = cli("case", "show", "BBB-42", "--json")
    shown = json.loads(out)["data"]
    assert shown["status"] == "new" and "message.json" in shown["files"]
    assert shown["threads"][0]["thread_ts"] == "1732870000.000100"

    code, out, _ = cli("case", "close", "BBB-42", "--reason", "dup", "--json")
    assert code == 0 and json.loads(out)["data"]["threads_closed"] == 1
    code, out, _ = cli("case", "close", "BBB-42", "--json")
    assert code == 0 and json.loads(out)["skipped"]

    log = _git("log", "--format=%s", "main", cwd=remote)
    assert "case BBB-42: opened (team-a)" in log and "case BBB-42: closed" in log


def test_illegal_transition_is_refused_from_the_cli(cli, config_dir: Path) -> None:  # type: ignore[no-untyped-def]
    assert cli("init")[0] == 0
    assert cli("case", "new", "--project", "team-a", "--title", "t", "--id", "X-1")[0] == 0
    from harness_cli.config import load_config
    from harness_cli.workspace.registry import update_case

    with update_case("X-1", load_config().harness.thresholds, "test") as case:
        case.move("investigating")
        case.move("awaiting_approval")
        case.move("approved")
        case.move("in_progress")
        case.move("mr_open")
        case.move("merged")
    with (
        pytest.raises(Exception, match="cannot become investigating"),
        update_case("X-1", load_config().harness.thresholds, "x") as case,
    ):
        case.move("investigating")


def test_unknown_project_is_bad_input(cli, config_dir: Path) -> None:  # type: ignore[no-untyped-def]
    assert cli("init")[0] == 0
    code, _, err = cli("case", "new", "--project", "nope", "--title", "t")
    assert code == 2 and "unknown project 'nope'" in err and "team-a" in err


def test_migrate_moves_the_root_and_rewrites_both_maps(
    cli,
    config_dir: Path,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert cli("init")[0] == 0
    assert cli("case", "new", "--project", "team-a", "--title", "a", "--id", "A-1")[0] == 0
    assert (
        cli("case", "new", "--project", "team-a", "--title", "b", "--id", "B-1", "--kind", "task")[
            0
        ]
        == 0
    )
    assert cli("case", "register-thread", "A-1", "--channel", "C1", "--thread-ts", "1.1")[0] == 0
    assert cli("case", "register-thread", "B-1", "--channel", "C1", "--thread-ts", "2.2")[0] == 0
    new_root = tmp_path / "renamed-workspace"
    code, out, _ = cli("case", "migrate", "--to", str(new_root), "--dry-run", "--json")
    assert code == 0 and (tmp_path / "workspace").exists()
    code, out, err = cli("case", "migrate", "--to", str(new_root), "--json")
    assert code == 0, err
    data = json.loads(out)["data"]
    assert data["moved"] is True
    assert data["rewritten"] == {
        "task-thread-map.json": 1,
        "oncall_thread_map.json": 1,
        "monitored-mrs.json": 0,
    }
    home = tmp_path / "harness-home"
    for name in ("task-thread-map.json", "oncall_thread_map.json"):
        for entry in json.loads((home / name).read_text())["threads"].values():
            assert entry["case_dir"].startswith(str(new_root))
            assert Path(entry["case_dir"], "case.json").exists()
    # the workspace keeps working from its new place
    monkeypatch.setenv("HARNESS_WORKSPACE", str(new_root))
    code, out, _ = cli("case", "list", "--json")
    assert {c["id"] for c in json.loads(out)["data"]} == {"A-1", "B-1"}
