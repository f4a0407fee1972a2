"""#34 item 13: one message per outcome, edited in place while work goes on; no cost line
twice; CI fix attempts update one message instead of a DM each."""

from __future__ import annotations

from tests.delivery.desk import Desk
from tests.memory.conftest import CASE, DM, Memory


def test_a_finished_task_is_one_message_with_one_cost_line(desk: Desk) -> None:
    desk.force_ci("success", times=4)
    desk.approved_case("QUIET-1")
    before = len(desk.harness_posts())
    desk.task("QUIET-1")
    posts = desk.harness_posts(before)
    print([p["text"][:200] for p in posts])
    assert len(posts) == 1, [p["text"][:120] for p in posts]
    assert posts[0]["text"].count("Cost:") == 1


def test_ci_fix_attempts_update_one_message(desk: Desk) -> None:
    desk.force_ci("failed", times=12)
    desk.approved_case("QUIET-2")
    desk.task("QUIET-2")
    before = len(desk.harness_posts())
    for _ in range(5):
        desk.cycle()
        desk.run_dispatched(expect=None)
    posts = desk.harness_posts(before)
    print([p["text"][:160] for p in posts])
    assert len(posts) <= 2, [p["text"][:120] for p in posts]


def test_an_investigation_ends_in_one_message_with_one_cost_line(mem: Memory) -> None:
    from tests.memory.test_followup import mem_ticket

    mem.slack.post_as("C0SUPPORT", "U0CUSTOMER", f"{CASE}: {mem_ticket()}")
    code, _, err = mem.cli("poll-slack", "--json")
    assert code == 0, err
    mem.parent_ts = mem.slack.messages(DM)[0]["ts"]
    mem.script("inv_honest")
    [payload] = sorted((mem.root / "harness-home" / "payloads").glob("*-investigate-*.json"))
    assert mem.cli("investigate", "--payload", str(payload), "--json")[0] == 0
    texts = [p["text"] for p in mem.thread_posts()]
    print(texts)
    assert sum(t.count("Cost:") for t in texts) == 1, texts
