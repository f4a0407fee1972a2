"""#34 item 10: `admin: task KEY --auto` runs unattended after the investigation — the case is
approved and the dev-agent starts (with no plan wait) without a reply; only the operator's own
command sets the flag."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import payloads
from tests.memory.conftest import DM, Memory

KEY = "AAA-140"


def _poll(mem: Memory) -> dict[str, Any]:
    code, out, err = mem.cli("poll-slack", "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)["data"]
    return data


def _investigate(mem: Memory) -> dict[str, Any]:
    [payload] = payloads(mem.root, "investigate")
    path = sorted((mem.root / "harness-home" / "payloads").glob("*-investigate-*.json"))[-1]
    code, out, err = mem.cli("investigate", "--payload", str(path), "--json")
    assert code == 0, err + out
    assert payload["case_id"] == KEY
    data: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return data


def _status(mem: Memory) -> str:
    from harness_cli.workspace import registry

    return registry.load_case(KEY).status


def test_task_auto_needs_no_approval_after_the_investigation(mem: Memory) -> None:
    mem.slack.post_as(DM, "U0OPERATOR", f"admin: task {KEY} --auto")
    _poll(mem)
    mem.script("inv_honest")
    _investigate(mem)
    assert _status(mem) == "approved"
    [dev] = payloads(mem.root, "dev-agent")
    assert dev["case_id"] == KEY and dev["args"] == {"mode": "task", "auto": True}


def test_without_auto_the_investigation_waits_for_the_operator(mem: Memory) -> None:
    mem.slack.post_as(DM, "U0OPERATOR", f"admin: task {KEY}")
    _poll(mem)
    mem.script("inv_honest")
    _investigate(mem)
    assert _status(mem) == "awaiting_approval"
    assert payloads(mem.root, "dev-agent") == []


def test_an_agent_writing_task_auto_into_the_case_folder_changes_nothing(mem: Memory) -> None:
    """The case folder's case.json is a mirror: an investigator that sets ``task_auto`` there
    (its writable root) does not make the case unattended."""
    mem.slack.post_as(DM, "U0OPERATOR", f"admin: task {KEY}")
    _poll(mem)
    mirror = mem.case_dir(KEY) / "case.json"
    data = json.loads(mirror.read_text())
    data["task_auto"] = True
    mirror.chmod(0o644)
    mirror.write_text(json.dumps(data))
    mem.script("inv_honest")
    _investigate(mem)
    assert _status(mem) == "awaiting_approval"
    assert payloads(mem.root, "dev-agent") == []
