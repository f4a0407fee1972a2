"""The followup prompt: the whole conversation so far, inside one budget.

"Skipping consolidation lets prompts outgrow the model's context window": the budget is the
hard ceiling here, whatever consolidation has or has not done yet. What gives way, in order:
the oldest unconsolidated transcripts (named, so the agent can read them from the case folder),
then the tail of ANALYSIS.md, of the ticket, of the older new replies, and last of TASK.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from harness_cli.memory.replies import Reply
from harness_cli.memory.transcripts import Transcript

Render = Callable[..., str]
"""``render(**values) -> prompt`` (the followup template, bound to the config)."""

CUT = "\n[… cut to fit the prompt budget; the whole text is in {name} in the case folder]"
OPERATOR_AUDIENCE = (
    "The new replies are the operator's own, in the case thread: answer them directly."
)
TICKET_AUDIENCE = (
    "The new replies were posted in the ticket's own thread by someone other than you and the "
    "operator. You never answer them there: write a short note for the operator — what was "
    "said and whether it changes the analysis — and then a suggested answer they may forward."
)


@dataclass
class FollowupInputs:
    case_id: str
    project: str
    status: str
    case_dir: str
    ticket: str
    task_md: str
    analysis_md: str
    transcripts: list[Transcript]
    """Unconsolidated transcripts, oldest first."""
    replies: list[Reply]
    audience: str = OPERATOR_AUDIENCE


@dataclass
class BuiltPrompt:
    text: str
    included: list[str] = field(default_factory=list)
    """Transcript files fed raw."""
    omitted: list[str] = field(default_factory=list)
    """Unconsolidated transcripts left out for size (named in the prompt)."""
    cut: list[str] = field(default_factory=list)
    """Parts shortened to fit: analysis, ticket, replies, task."""


def reply_block(replies: list[Reply]) -> str:
    return "\n\n".join(f"### <@{r.user}> · {r.ts} · {r.where}\n{r.text}" for r in replies)


def transcript_block(items: list[Transcript], omitted: list[Transcript]) -> str:
    parts: list[str] = []
    if omitted:
        names = ", ".join(t.path.name for t in omitted)
        parts.append(
            f"({len(omitted)} older transcript(s) not consolidated yet are left out for size: "
            f"{names}. Read them from the case folder if the answer depends on them.)"
        )
    parts += [f"### {t.path.name}\n{t.body.strip()}" for t in items]
    return "\n\n".join(parts) if parts else "(none since the last consolidation)"


def _cut(text: str, keep: int, name: str) -> str:
    note = CUT.format(name=name)
    return text if len(text) <= keep else text[: max(0, keep - len(note))] + note


def build(inputs: FollowupInputs, render: Render, budget: int) -> BuiltPrompt:
    values = {
        "case_id": inputs.case_id,
        "project": inputs.project,
        "status": inputs.status,
        "case_dir": inputs.case_dir,
        "audience": inputs.audience,
        "ticket": inputs.ticket.strip() or "(no ticket text)",
        "task_md": inputs.task_md.strip() or "(no TASK.md yet)",
        "analysis_md": inputs.analysis_md.strip() or "(no ANALYSIS.md yet)",
        "replies": reply_block(inputs.replies),
    }
    built = BuiltPrompt("")
    # The fixed part first: with no transcript at all, does it fit? If not, shorten the parts
    # in the order that loses the least (ANALYSIS.md is on disk, TASK.md is the memory).
    shrinkable = (
        ("analysis_md", "ANALYSIS.md", 600),
        ("ticket", "message.json", 600),
        ("replies", "the Slack thread", 1200),
        ("task_md", "TASK.md", 600),
    )
    for key, name, floor in shrinkable:
        over = len(render(**values, transcripts=transcript_block([], inputs.transcripts))) - budget
        if over <= 0:
            break
        keep = max(floor, len(values[key]) - over)
        values[key] = _cut(values[key], keep, name)
        built.cut.append(key.removesuffix("_md"))
    # Then as many of the newest transcripts as fit, fed in turn order.
    items = list(inputs.transcripts)
    for start in range(len(items) + 1):
        kept, omitted = items[start:], items[:start]
        text = render(**values, transcripts=transcript_block(kept, omitted))
        if len(text) <= budget or start == len(items):
            built.text = text
            built.included = [t.path.name for t in kept]
            built.omitted = [t.path.name for t in omitted]
            break
    if len(built.text) > budget:
        # Every part is at its floor and the template itself is too big for the budget.
        built.text = _cut(built.text, budget, "the case folder")
        built.cut.append("prompt")
    return built
