"""#34 item 4: the operator's reply in the thread of a case whose file is unreadable is not
lost: the operator is told once (with the fix), and the reply is answered in the first cycle
after the file is repaired — however long the repair takes."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import payloads
from tests.memory.conftest import CASE, DM, Memory


def _poll(mem: Memory) -> dict[str, Any]:
    code, out, err = mem.cli("poll-slack", "--json")
    data: dict[str, Any] = json.loads(out)["data"] if out.strip() else {"exit": code, "err": err}
    return data


def _dms(mem: Memory) -> list[str]:
    return [m["text"] for m in mem.slack.messages(DM) if not m.get("thread_ts")]


def test_a_reply_to_a_case_with_a_broken_file_is_told_and_answered_after_the_repair(
    mem: Memory,
) -> None:
    mem.open_case()
    record = mem.root / "workspace" / "control" / CASE / "case.json"
    good = record.read_bytes()
    record.write_bytes(good[:50])  # truncated
    asked = mem.reply("Could the rounding of 5.00 play a part too?")
    before = len(_dms(mem))
    for _ in range(8):  # longer than intake_max_attempts: a broken file is not a bad message
        _poll(mem)
    told = [t for t in _dms(mem)[before:] if f"{DM}/{asked}" in t]
    assert len(told) == 1 and "case.json" in told[0] and f"`admin: repair {CASE}`" in told[0]
    assert payloads(mem.root, "followup") == []

    code, out, err = mem.cli("admin", f"repair {CASE}")  # the operator repairs it, as told
    assert code == 0 and "restored from commit" in out, out + err
    assert record.read_bytes().strip() == good.strip()
    _poll(mem)
    [followup] = payloads(mem.root, "followup")
    assert followup["case_id"] == CASE and followup["trigger"]["ts"] == asked
