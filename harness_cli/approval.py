"""The operator's approval of a drafted case, in one place: the words a reply may be, the
reactions on the draft, and what the draft says about them (#34 item 12).

Who may approve, and where (the operator, in the case thread), is the readers' rule
(:mod:`harness_cli.memory.replies`, :mod:`harness_cli.intake.threads`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

APPROVAL_WORDS = frozenset(
    {
        "go", "go ahead", "approve", "approved", "i approve", "lgtm", "ship it", "looks good",
        "looks good to me", "+1", ":+1:", ":white_check_mark:", ":heavy_check_mark:", "✅", "👍",
    }
)  # fmt: skip
"""A reply that is exactly one of these (case, spaces and trailing punctuation aside) approves
the case; a sentence that merely contains one ("go ahead and check the logs") does not. #34
item 12: "lgtm" and "ship it" were questions to the model; the draft names these words
(:data:`APPROVAL_HINT`), and none of them costs a model call."""
APPROVAL_REACTIONS = frozenset({"white_check_mark", "heavy_check_mark", "+1", "thumbsup"})
"""The operator's reaction on the draft (or the case thread's parent) that approves it."""
APPROVAL_HINT = "reply `approve`, `lgtm`, `ship it` or `go`, or react ✅, to approve"
"""What the draft says, so the operator knows the words without reading the code."""
_TRAILING = re.compile(r"[\s.!]+$")


def is_approval_text(text: str) -> bool:
    words = " ".join(_TRAILING.sub("", text.strip()).lower().split())
    return words in APPROVAL_WORDS


def approval_reaction(message: Mapping[str, Any], operator: str) -> bool:
    """The operator reacted to this message with one of :data:`APPROVAL_REACTIONS`."""
    for reaction in message.get("reactions") or []:
        if not isinstance(reaction, dict):
            continue
        name = str(reaction.get("name", "")).split("::")[0]  # skin tones: "+1::skin-tone-2"
        if name in APPROVAL_REACTIONS and operator in (reaction.get("users") or []):
            return True
    return False
