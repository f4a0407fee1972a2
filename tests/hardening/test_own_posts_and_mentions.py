"""L4: the harness knows its own posts the Slack-native way — message metadata it sets through
the API, and the ts it recorded when posting — never by a character anyone can type; and no
third-party text it quotes or drafts can mention a channel or a person through it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from tests.conftest import REPO, payloads

MARK = "\u2063"
MENTIONS = ("<!channel>", "<!here>", "<!everyone>", "<@U0REVIEWER>", "<!subteam^S0ONCALL|oncall>")
SCRIPT = Path(__file__).with_name("data") / "leaky_investigator.yaml"


def _poll(cli) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    code, out, err = cli("poll-slack", "--json")
    assert code == 0, out + err
    data: dict[str, Any] = json.loads(out)["data"]
    return data


def _harness_posts(slack: Any) -> list[dict[str, Any]]:
    return [
        m
        for m in slack.messages("D0SELF", metadata=True)
        if (m.get("metadata") or {}).get("event_type") == "harness_post"
    ]


def test_a_ticket_ending_in_the_old_invisible_mark_is_a_ticket(
    cli, slack_emu, harness_ready: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"AAA-51 the export is empty{MARK}")
    data = _poll(cli)
    assert data["new_cases"] == ["AAA-51"]
    assert [p["case_id"] for p in payloads(tmp_path, "investigate")] == ["AAA-51"]


def test_the_operators_admin_command_ending_in_it_is_obeyed(
    cli, slack_emu, harness_ready: Path
) -> None:  # type: ignore[no-untyped-def]
    slack_emu.post_as("D0SELF", "U0OPERATOR", f"admin: oncall pause{MARK}")
    data = _poll(cli)
    assert data["admin"], data
    _, out, _ = cli("status", "--json")
    assert json.loads(out)["data"]["paused"] is True


def test_every_post_carries_metadata_and_no_mark_and_is_never_input(
    cli, slack_emu, harness_ready: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-52 the import is slow")
    _poll(cli)
    [parent] = _harness_posts(slack_emu)
    status = slack_emu.post_as(
        "D0SELF", "U0OPERATOR", "admin: oncall status", thread_ts=parent["ts"]
    )
    _poll(cli)
    posts = _harness_posts(slack_emu)
    answer = next(p for p in posts if p.get("thread_ts") == parent["ts"])
    assert answer["ts"] > status["ts"]
    assert all(MARK not in m["text"] for m in slack_emu.messages("D0SELF"))
    # a machine that never recorded those posts (its dedup set lost) still knows them
    (tmp_path / "harness-home" / "socket-dedup").unlink()
    _poll(cli)
    triggered = {p["trigger"]["ts"] for p in payloads(tmp_path, "followup")}
    assert not triggered & {p["ts"] for p in posts}, "an own post became input"
    # while a real reply of the operator in that thread is answered
    reply = slack_emu.post_as("D0SELF", "U0OPERATOR", "why slow?", thread_ts=parent["ts"])
    _poll(cli)
    assert reply["ts"] in {p["trigger"]["ts"] for p in payloads(tmp_path, "followup")}


@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AnthropicEmulator]:
    emu = AnthropicEmulator()
    emu.start()
    shutil.copytree(REPO / "sops", tmp_path / "sops")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", emu.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-mentions")
    monkeypatch.setenv("HARNESS_RUNTIME", "anthropic")
    try:
        yield emu
    finally:
        emu.stop()


def test_mentions_in_a_ticket_and_in_a_draft_are_defused(
    cli, slack_emu, harness_ready: Path, model: AnthropicEmulator
) -> None:  # type: ignore[no-untyped-def]
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-53 urgent " + " ".join(MENTIONS))
    _poll(cli)
    model.load_script(SCRIPT, {"leak": "<!channel> <@U0REVIEWER> <!here>"})
    code, out, err = cli("investigate", "AAA-53")
    assert code == 0, out + err
    posts = [m["text"] for m in _harness_posts(slack_emu)]
    quote = next(t for t in posts if "AAA-53" in t and "urgent" in t)
    draft = next(t for t in posts if "Draft response" in t)
    for text in (quote, draft):
        assert not [m for m in MENTIONS if m in text], text
        assert "<!" not in text and "<@" not in text, text
    assert "@channel" in quote and "@U0REVIEWER" in quote and "@oncall" in quote
    assert "@here" in draft


def test_the_listener_never_takes_an_own_post_for_the_operators(
    cli,  # type: ignore[no-untyped-def]
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Socket Mode event of a harness post carries no metadata and can arrive before the
    poster has recorded the ts it got back: it still is not the operator speaking."""
    import threading
    import time

    from harness_cli.intake.listener import listen
    from harness_cli.wiring import intake_context

    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1-A0HARNESS-0000-test")
    stop = threading.Event()
    listener = threading.Thread(
        target=listen,
        args=(intake_context(),),
        kwargs={"stop": stop, "ping_interval": 0.5},
        daemon=True,
    )
    listener.start()
    deadline = time.monotonic() + 10
    while not slack_emu.snapshot()["socket_mode"]["connections"] and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-54 the report is blank")
        deadline = time.monotonic() + 10
        while not _harness_posts(slack_emu) and time.monotonic() < deadline:
            time.sleep(0.05)
        [parent] = _harness_posts(slack_emu)
        tmap = tmp_path / "harness-home" / "oncall_thread_map.json"
        while parent["ts"] not in (tmap.read_text() if tmap.exists() else ""):
            assert time.monotonic() < deadline, "the case thread was never registered"
            time.sleep(0.05)
        slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: oncall status", thread_ts=parent["ts"])
        deadline = time.monotonic() + 10
        while len(_harness_posts(slack_emu)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.5)  # the events of both harness posts have been handled by now
    finally:
        stop.set()
        listener.join(timeout=10)
    assert len(_harness_posts(slack_emu)) == 2  # the case thread and the status answer
    assert payloads(tmp_path, "followup") == []
