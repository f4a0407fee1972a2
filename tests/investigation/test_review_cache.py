"""#22: a reviewer's working folder is the same path every time it reviews one case, so a
review of the same material is the same prompt and the prompt cache serves it whole. On main
each review staged its files in a fresh ``mkdtemp`` folder whose random name was in the run's
facts, ahead of the reviewer's prompt: the re-review wrote its whole prompt to the cache again.

`harness investigate` (which reviews its conclusion) then `harness review` of the unchanged
case, on both runtimes; what is checked is what reached the emulator."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness_cli.sandbox.anthropic_usage import (
    count_input_tokens,
    min_cacheable_tokens,
    prompt_blocks,
)
from harness_cli.sandbox.model_script import RequestView
from tests.investigation.conftest import BOTH, REVIEWERS, Investigation


def _openers(inv: Investigation, role: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(body, usage) of each conversation ``role`` opened, oldest first."""
    bodies = inv.requests()
    assert len(bodies) == len(inv.emu.calls)  # one answer per request: no fault was served
    return [
        (body, call.usage)
        for body, call in zip(bodies, inv.emu.calls, strict=True)
        if call.role == role and call.turn == 0
    ]


def _prompt(body: dict[str, Any]) -> list[str]:
    """What the cache compares: tools, system and messages, block by block (not metadata)."""
    return [block.key for block in prompt_blocks(body)]


@pytest.mark.parametrize("runtime", BOTH)
def test_a_second_review_of_the_same_case_reads_its_whole_prompt_from_the_cache(
    inv: Investigation,
) -> None:
    inv.script("inv_honest")
    inv.open_case()
    inv.investigate()

    code, out, err = inv.cli("review", "AAA-101", "--json")

    assert code == 0, err + out
    assert json.loads(out)["ok"]
    for role in REVIEWERS:
        first, again = _openers(inv, role)[-2:]
        assert RequestView.from_body(again[0]).cwd == RequestView.from_body(first[0]).cwd
        assert _prompt(again[0]) == _prompt(first[0]), f"the {role}'s re-review has a new prompt"
        total = count_input_tokens(again[0])
        if total >= min_cacheable_tokens(str(again[0]["model"])):
            assert again[1]["cache_read_input_tokens"] == total, (role, again[1], total)
