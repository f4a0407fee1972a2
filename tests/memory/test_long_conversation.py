"""A 30-reply thread over five hours: consolidation (dispatched inline by the followup when
its trigger fires) keeps every followup prompt within budget and turn 30's prompt within twice
turn 2's, without ever having to leave a transcript out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from harness_cli.memory.thresholds import MemoryThresholds
from harness_cli.memory.transcripts import list_all
from tests.memory.conftest import Memory

T0 = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
TOPICS = (
    "the README wording for the threshold",
    "orders of 11 units and more",
    "the rounding of 5.00 amounts",
    "the order-service request log for last Tuesday",
    "customers who were overcharged since the rule changed",
    "whether the rate constant is shared with the invoicing job",
)


def conversation(n: int = 30) -> list[str]:
    """Operator replies of a realistic length; every fifth settles something, every seventh
    names a commit, the rest ask and comment."""
    out: list[str] = []
    for i in range(1, n + 1):
        topic = TOPICS[i % len(TOPICS)]
        text = (
            f"Reply {i}: about {topic} — can you check what the case folder says, and tell me "
            f"whether it changes the plan? I am looking at the dashboard for {topic} meanwhile, "
            "so a short answer is fine."
        )
        if i % 5 == 0:
            text += f" OK, we decided: {topic} stays out of this MR."
        if i % 7 == 0:
            text += f" FYI the hotfix branch is at {0x3F2A9C1 + i:07x}."
        out.append(text)
    return out


@pytest.mark.slow
def test_thirty_replies_stay_within_budget_once_consolidation_runs(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_DISPATCH", "inline")
    folder = mem.open_case()
    for i, text in enumerate(conversation()):
        monkeypatch.setenv("HARNESS_NOW", (T0 + timedelta(minutes=10 * i)).isoformat())
        mem.reply(text)
        mem.followup()

    prompts = mem.prompts("followup")
    budget = MemoryThresholds().followup_prompt_budget_chars
    assert len(prompts) == 30 and max(map(len, prompts)) <= budget
    turn2, turn30 = len(prompts[1]), len(prompts[29])
    assert turn30 <= 2 * turn2, (turn2, turn30)
    transcripts = list_all(folder)
    assert not any(t.meta.left_out for t in transcripts)  # the budget never had to bite
    consolidations = len(mem.prompts("consolidator"))
    assert consolidations >= 5
    assert sum(t.consolidated for t in transcripts) >= 25
    raw = sum(t.size for t in transcripts)
    assert raw > 3 * sum(t.size for t in transcripts if not t.consolidated)
    assert "Reply 3: about" not in prompts[29]  # folded into TASK.md long ago
    assert "## Decisions from the follow-up conversation" in prompts[29]
    assert len(mem.prompts("gap-analyzer")) == 6
