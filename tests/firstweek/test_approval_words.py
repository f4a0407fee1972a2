"""#34 item 12: the draft says which words approve; "lgtm", "ship it" and a ✅ on the draft
approve like "approve" — and none of them costs a model call."""

from __future__ import annotations

import json
from typing import Any

import pytest
from slack_sdk import WebClient

from tests.conftest import payloads
from tests.memory.conftest import CASE, DM, OWN, Memory


def _poll(mem: Memory) -> dict[str, Any]:
    code, out, err = mem.cli("poll-slack", "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)["data"]
    return data


def _run_followups(mem: Memory) -> None:
    for p in sorted((mem.root / "harness-home" / "payloads").glob("*-followup-*.json")):
        code, out, err = mem.cli("followup", "--payload", str(p), "--json")
        assert code == 0, err + out


def _status(mem: Memory) -> str:
    return str(json.loads((mem.case_dir() / "case.json").read_text())["status"])


@pytest.mark.parametrize("word", ["lgtm", "LGTM!", "Ship it!", "looks good to me", ":+1:"])
def test_common_approval_words_approve_without_a_model_call(mem: Memory, word: str) -> None:
    mem.open_case()
    mem.reply(word)
    _poll(mem)
    _run_followups(mem)
    assert mem.requests() == []  # not one model call to learn it was an approval
    assert _status(mem) == "approved"
    [dev] = payloads(mem.root, "dev-agent")
    assert dev["case_id"] == CASE and dev["args"]["mode"] == "task"


def test_a_check_mark_on_the_draft_approves_once(mem: Memory) -> None:
    mem.open_case()
    draft = mem.slack.post_as(
        DM, "U0OPERATOR", "`complete 92`\nDraft response: …", thread_ts=mem.parent_ts,
        metadata=OWN,
    )  # fmt: skip
    _poll(mem)
    operator = WebClient(token="xoxp-0000000000-test-operator", base_url=mem.slack.url + "/api/")
    operator.reactions_add(channel=DM, timestamp=draft["ts"], name="white_check_mark")
    _poll(mem)
    assert _status(mem) == "approved"
    [dev] = payloads(mem.root, "dev-agent")
    assert dev["case_id"] == CASE
    assert "dev-agent started" in mem.thread_posts()[-1]["text"]
    _poll(mem)  # the reaction is still there: nothing happens twice
    assert len(payloads(mem.root, "dev-agent")) == 1
    assert mem.requests() == []


def test_the_draft_names_the_words_that_approve(mem: Memory) -> None:
    from tests.memory.test_followup import mem_ticket

    mem.slack.post_as("C0SUPPORT", "U0CUSTOMER", f"{CASE}: {mem_ticket()}")
    assert _poll(mem)["new_cases"] == [CASE]
    mem.parent_ts = mem.slack.messages(DM)[0]["ts"]
    mem.script("inv_honest")
    [payload] = sorted((mem.root / "harness-home" / "payloads").glob("*-investigate-*.json"))
    assert mem.cli("investigate", "--payload", str(payload), "--json")[0] == 0
    [draft] = [p for p in mem.thread_posts() if "Draft response" in p["text"]]
    for word in ("`approve`", "`lgtm`", "`ship it`", "`go`", "✅"):
        assert word in draft["text"]
