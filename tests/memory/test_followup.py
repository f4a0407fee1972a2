"""`harness followup`: the chat agent answers the thread with the whole conversation, writes a
transcript per turn, posts only into the case thread, hands an approval to the dev-agent, and
calls the gap analyzer every N replies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_cli.memory.gap_analyzer import load_gap_reports
from harness_cli.memory.transcripts import list_all
from harness_cli.outbox.outbound import is_own_post
from tests.conftest import payloads
from tests.memory.conftest import CASE, DM, OPERATOR, Memory, last_json

ANSWER = "the strict comparison in pricing/discount.py remains the root cause"


def _poll(cli) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    code, out, err = cli("poll-slack", "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)["data"]
    return data


def _run_payload(mem: Memory, workflow: str, index: int = -1) -> dict[str, Any]:
    found = sorted((mem.root / "harness-home" / "payloads").glob(f"*-{workflow}-*.json"))
    code, out, err = mem.cli(workflow, "--payload", str(found[index]), "--json")
    assert code == 0, f"{workflow} exited {code}: {err}{out}"
    return last_json(out)


def test_ticket_to_followup_to_approval_end_to_end(mem: Memory) -> None:
    """A ticket → poll-slack → investigation (posted in the case thread) → the operator's reply
    → poll-slack dispatches followup → the answer lands in the thread and in a transcript →
    "approve" → the dev-agent is dispatched, without a model call."""
    mem.slack.post_as("C0SUPPORT", "U0CUSTOMER", f"{CASE}: {mem_ticket()}")
    assert _poll(mem.cli)["new_cases"] == [CASE]
    mem.parent_ts = mem.slack.messages(DM)[0]["ts"]
    mem.script("inv_honest")
    assert _run_payload(mem, "investigate")["data"]["status"] == "awaiting_approval"
    mem.script("memory")
    before = len(mem.thread_posts())

    asked = mem.reply("Could the rounding of 5.00 play a part too?")
    assert _poll(mem.cli)["dispatched"] == [f"followup {CASE}"]
    [payload] = payloads(mem.root, "followup")
    assert payload["trigger"] == {"kind": "operator_reply", "ts": asked, "user": OPERATOR}
    run = _run_payload(mem, "followup")["data"]
    [turn] = run["turns"]
    posts = mem.thread_posts()
    assert len(posts) == before + 1 and ANSWER in posts[-1]["text"]
    assert turn["posted_ts"] == posts[-1]["ts"]
    [transcript] = mem.transcripts()
    text = transcript.read_text()
    assert transcript.name == "followup_transcript_001.md"
    assert "Could the rounding of 5.00 play a part too?" in text and ANSWER in text
    assert f"replies:\n- '{asked}'" in text
    [prompt] = mem.prompts("followup")
    assert prompt.startswith("[harness-role: followup]")
    for part in ("Bulk discount is not applied", "## TASK.md", "quantity > BULK_THRESHOLD",
                 "Could the rounding of 5.00 play a part too?"):  # fmt: skip
        assert part in prompt, part

    # the same payload again: already answered — no model call, no post
    calls = len(mem.requests())
    assert _run_payload(mem, "followup")["skipped"]
    assert len(mem.requests()) == calls and len(mem.thread_posts()) == before + 1

    mem.reply("approve")
    _poll(mem.cli)
    run = _run_payload(mem, "followup")["data"]
    assert run["turns"][0]["approval"] is True
    assert len(mem.requests()) == calls  # an approval is not a conversation
    [dev] = payloads(mem.root, "dev-agent")
    assert dev["case_id"] == CASE and dev["args"]["mode"] == "task"
    assert json.loads((mem.case_dir() / "case.json").read_text())["status"] == "approved"
    assert "dev-agent started" in mem.thread_posts()[-1]["text"]
    assert len(mem.transcripts()) == 2


def mem_ticket() -> str:
    return (
        "Bulk discount is not applied to orders of exactly 10 units. The README says 10 % off "
        "from 10 units on, and an order of 10 × 5.00 is charged 50.00 instead of 45.00."
    )


def test_each_turn_feeds_the_conversation_so_far(mem: Memory) -> None:
    mem.open_case()
    mem.reply("First: is the threshold a constant or configuration?")
    mem.followup()
    mem.reply("Second: please check the analysis file again.")
    run = mem.followup()["data"]
    assert [t["transcript"] for t in run["turns"]] == ["followup_transcript_002.md"]
    first, second = mem.prompts("followup")
    assert "is the threshold a constant" in second and "followup_transcript_001.md" in second
    assert "please check the analysis file" not in first
    # the agent may read the case folder (it did: Read ANALYSIS.md), but is offered no write
    reads = [b for b in mem.requests("followup") if b.get("tools")]
    offered = {t["name"] for b in reads for t in b["tools"]}
    assert "Read" in offered and not offered & {"Write", "Edit", "Bash"}
    assert "quantity > BULK_THRESHOLD" in mem.thread_posts()[-1]["text"]


def test_two_replies_before_a_run_are_answered_in_one_turn(mem: Memory) -> None:
    mem.open_case()
    one = mem.reply("One more thing about the README wording.")
    two = mem.reply("And what about 11 units?")
    run = mem.followup()["data"]
    [turn] = run["turns"]
    assert turn["replies"] == [one, two]
    assert len(mem.prompts("followup")) == 1
    assert mem.followup()["data"]["turns"] == []


def test_approval_words_only_from_the_operator_and_only_whole(mem: Memory) -> None:
    mem.open_case()
    mem.reply("go ahead and check the logs first")  # a sentence, not an approval
    assert mem.followup()["data"]["turns"][0]["approval"] is False
    mem.reply("Go!")
    assert mem.followup()["data"]["turns"][0]["approval"] is True
    [dev] = payloads(mem.root, "dev-agent")
    assert dev["case_id"] == CASE


def test_go_in_the_ticket_thread_is_conversation_and_is_answered_in_the_case_thread(
    mem: Memory,
) -> None:
    from harness_cli.dispatch.payload import Payload, Trigger, write_payload

    mem.open_case()
    ticket = mem.slack.post_as("C0SUPPORT", "U0CUSTOMER", f"{CASE} totals wrong")
    said = mem.slack.post_as("C0SUPPORT", "U0CUSTOMER", "go", thread_ts=ticket["ts"])
    path = write_payload(
        Payload(
            workflow="followup",
            case_id=CASE,
            case_dir=str(mem.case_dir()),
            channel="C0SUPPORT",
            thread_ts=ticket["ts"],
            trigger=Trigger(kind="ticket_reply", ts=said["ts"], user="U0CUSTOMER"),
        )
    )
    code, out, err = mem.cli("followup", "--payload", str(path), "--json")
    assert code == 0, err
    [turn] = last_json(out)["data"]["turns"]
    assert turn["approval"] is False and payloads(mem.root, "dev-agent") == []
    support = [m for m in mem.slack.messages("C0SUPPORT", metadata=True) if is_own_post(m)]
    assert support == []  # never a word in the support channel
    post = mem.thread_posts()[-1]["text"]
    assert post.startswith("New in the ticket thread:") and "@U0CUSTOMER: go" in post
    assert "<@" not in post  # the quoted customer is named, never mentioned
    assert "someone other than you and the operator" in mem.prompts("followup")[0]


def test_gap_analyzer_runs_every_five_replies_and_writes_a_parseable_report(
    mem: Memory,
) -> None:
    folder = mem.open_case()
    for n in range(1, 6):
        mem.reply(f"Reply {n}: did anyone look at the order-service logs?")
        run = mem.followup()["data"]
        assert (run["gap_reports"] != []) == (n == 5), n
    assert len(mem.prompts("gap-analyzer")) == 1
    [(path, report)] = load_gap_reports(folder)
    assert path.name == "gap_report_001.md"
    assert report.category == "skipped_source" and report.target_file == "sops/team-a/SOP.md"
    assert report.case_id == CASE and report.confidence == 70 and report.status == "open"
    assert report.transcripts == [f"followup_transcript_{n:03d}.md" for n in range(1, 6)]
    gap_prompt = mem.prompts("gap-analyzer")[0]
    assert "Reply 5: did anyone look" in gap_prompt and "sops/team-a/SOP.md" in gap_prompt
    # five more replies: a second analysis, and the same gap is not filed twice
    for n in range(6, 11):
        mem.reply(f"Reply {n}: anything else?")
        mem.followup()
    assert len(mem.prompts("gap-analyzer")) == 2
    assert len(load_gap_reports(folder)) == 1
    assert "The investigation never read the order-service logs" in mem.prompts("gap-analyzer")[1]


def test_a_case_without_a_thread_is_a_usage_error(mem: Memory) -> None:
    mem.open_case(thread=False)
    code, _, err = mem.cli("followup", CASE)
    assert code == 2 and "no case thread" in err


def test_a_second_followup_on_the_same_case_exits_3(mem: Memory) -> None:
    from harness_cli.state.locks import workflow_lock

    mem.open_case()
    mem.reply("anything?")
    with workflow_lock("followup", CASE):
        code, _, err = mem.cli("followup", CASE)
    assert code == 3 and "locked by another run" in err
    assert mem.requests() == []


def test_transcripts_round_trip_their_front_matter(mem: Memory) -> None:
    folder = mem.open_case()
    mem.reply("what is the rate constant?")
    mem.followup("--no-post")
    [t] = list_all(folder)
    assert t.meta.case_id == CASE and t.meta.trigger == "manual" and t.meta.posted_ts is None
    assert t.meta.at is not None and t.meta.at.tzinfo is not None
    assert t.meta.prompt_chars > 1000 and not t.consolidated
    assert mem.thread_posts() == []
    memory = json.loads((folder / "memory.json").read_text())
    assert memory["turns"] == 1 and memory["replies_since_gap"] == 1
    assert Path(folder / "memory.json").exists()


def test_a_reply_slack_does_not_show_yet_is_read_again(mem: Memory) -> None:
    """Slack's replies lag like history does: the reply that woke the followup is read again
    until it shows (the waits go through the injected sleep, so the test does not sleep)."""
    from harness_cli import wiring
    from harness_cli.memory.replies import Thread, new_replies, read_until_visible

    mem.open_case()
    mem.slack.set_lag(DM, polls=2)
    wanted = mem.reply("visible only on the third read")
    slack = wiring.slack()
    thread = Thread(DM, mem.parent_ts, in_self_dm=True)
    waits: list[float] = []
    found = read_until_visible(
        lambda: new_replies(slack, thread, OPERATOR, after=None),
        wanted,
        attempts=3,
        wait_seconds=2.0,
        sleep=waits.append,
    )
    assert [r.ts for r in found] == [wanted] and waits == [2.0, 2.0]


def test_a_reply_never_shown_ends_the_run_without_a_model_call(mem: Memory) -> None:
    from harness_cli import wiring
    from harness_cli.memory.replies import Thread, new_replies, read_until_visible

    mem.open_case()
    mem.slack.set_lag(DM, polls=10)
    wanted = mem.reply("stuck behind the lag")
    waits: list[float] = []
    found = read_until_visible(
        lambda: new_replies(wiring.slack(), Thread(DM, mem.parent_ts, True), OPERATOR, after=None),
        wanted,
        attempts=3,
        wait_seconds=0.5,
        sleep=waits.append,
    )
    assert found == [] and waits == [0.5, 0.5]
