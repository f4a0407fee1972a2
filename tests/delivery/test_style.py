"""L0: the style linter (sops/STYLE.md made mechanical) on a table of good and bad texts."""

from __future__ import annotations

import pytest

from harness_cli.delivery.style import (
    StyleViolation,
    lint_commit_message,
    lint_description,
    lint_title,
    looks_like_command,
)

PROSE = (
    "Orders of exactly ten units were charged full price, because the bulk discount compared\n"
    "the quantity with `>` where the README promises the discount from ten units on."
)
PROOF = (
    "`python -m pytest -q tests/test_discount.py`\n"
    "\n"
    "    .....                                                  [100%]\n"
    "    5 passed in 0.02s\n"
)
CHANGES = (
    "Changes:\n"
    "- `pricing/discount.py`: compare the quantity with `>=` against `BULK_THRESHOLD`\n"
    "- two previously failing tests in `tests/test_discount.py` now pass\n"
)
GOOD = f"{PROSE}\n\n{PROOF}\n{CHANGES}"

FENCED_PROOF = (
    "```\n$ pytest tests/test_discount.py -v\n"
    "tests/test_discount.py::test_discount_starts_at_threshold PASSED\n"
    "5 passed in 0.03s\n```\n"
)


def codes(violations: list[StyleViolation]) -> list[str]:
    return sorted({v.code for v in violations})


DESCRIPTIONS: list[tuple[str, str, list[str]]] = [
    ("plain prose + proof + Changes", GOOD, []),
    ("fenced proof with a $ prompt", f"{PROSE}\n\n{FENCED_PROOF}\n{CHANGES}", []),
    (
        "backticked command, then a fenced output block",
        f"{PROSE}\n\nRunning `pytest tests/test_discount.py -v` gives:\n\n"
        "```\n5 passed in 0.03s\n```\n\n" + CHANGES,
        [],
    ),
    (
        "a human co-author is fine",
        GOOD + "\nCo-Authored-By: Jane Doe <jane@example.com>\n",
        [],
    ),
    ("a bold filename in a bullet is not a tag", GOOD + "- **pricing/discount.py**: tidy\n", []),
    (
        "a hash comment inside a code block is not a heading",
        f"{PROSE}\n\n```\n# Summary of the run\n$ make test\nok\n```\n\n{CHANGES}",
        [],
    ),
    ("bold Root cause tag", f"**Root cause:** the comparison is off by one.\n\n{GOOD}", ["S3"]),
    ("bold tag in a bullet", GOOD + "- **Risk:** low\n", ["S3"]),
    ("underscore bold tag", f"__Fix:__ compare with >=.\n\n{GOOD}", ["S3"]),
    ("colon outside the bold", f"**Risk**: low, one comparison.\n\n{GOOD}", ["S3"]),
    ("## Summary heading", f"## Summary\n\n{GOOD}", ["S2"]),
    ("## Root Cause heading", f"{GOOD}\n## Root Cause\n\nThe comparison is wrong here.\n", ["S2"]),
    ("## Testing heading", f"{PROSE}\n\n## Testing\n\n{PROOF}\n{CHANGES}", ["S2"]),
    ("What this MR does template", f"What this MR does / why we need it:\n\n{GOOD}", ["S2"]),
    ("bare Summary: label", f"Summary:\n{GOOD}", ["S2"]),
    ("bold-line heading", f"**Description**\n\n{GOOD}", ["S2"]),
    ("Co-Authored-By Claude", GOOD + "\nCo-Authored-By: Claude <noreply@anthropic.com>\n", ["S1"]),
    (
        "Generated with footer",
        GOOD + "\n🤖 Generated with [Claude Code](https://claude.ai/code)\n",
        ["S1"],
    ),
    ("as an AI", f"As an AI, I changed the comparison in the discount code.\n\n{GOOD}", ["S1"]),
    ("missing Changes list", f"{PROSE}\n\n{PROOF}", ["S4"]),
    ("Changes: with no bullets", f"{PROSE}\n\n{PROOF}\nChanges:\nThe comparison.\n", ["S4"]),
    ("vague one-word bullet", f"{PROSE}\n\n{PROOF}\nChanges:\n- fixes\n", ["S4"]),
    ("no prose, only the list", f"{PROOF}\n{CHANGES}", ["S5"]),
    ("verified locally, no command", f"{PROSE} Verified locally.\n\n{CHANGES}", ["S6", "S7"]),
    ("works on my machine", f"{PROSE}\nWorks on my machine.\n\n{CHANGES}", ["S6", "S7"]),
    (
        "a command with no output line",
        f"{PROSE}\n\nRan `pytest -q` and all good.\n\n{CHANGES}",
        ["S6"],
    ),
    ("a code block that is not a command", f"{PROSE}\n\n    x = 1\n    y = 2\n\n{CHANGES}", ["S6"]),
]


@pytest.mark.parametrize(
    ("text", "expected"), [(t, e) for _, t, e in DESCRIPTIONS], ids=[n for n, _, _ in DESCRIPTIONS]
)
def test_description_table(text: str, expected: list[str]) -> None:
    found = lint_description(text)
    assert codes(found) == expected, [v.render() for v in found]


COMMITS: list[tuple[str, str, list[str]]] = [
    ("imperative subject", "Apply the bulk discount from ten units on", []),
    ("scoped subject", "pricing: apply the bulk discount at the threshold", []),
    ("conventional prefix", "fix(pricing): compare the quantity with >=", []),
    (
        "subject and body",
        "Apply the bulk discount at the threshold\n\nThe README promises ten units on.\n",
        [],
    ),
    ("verb ending in -ed that is imperative", "Speed up the discount lookup", []),
    ("verb ending in -ing that is imperative", "Bring the README in line with the code", []),
    ("human co-author trailer", "Fix the discount\n\nCo-Authored-By: Jane <jane@example.com>", []),
    ("past tense", "Fixed the bulk discount", ["S10"]),
    ("third person", "Fixes the bulk discount", ["S10"]),
    ("gerund", "Updating the discount threshold", ["S10"]),
    ("this commit", "This commit repairs the discount", ["S10"]),
    ("trailing period", "Fix the bulk discount.", ["S9"]),
    ("too long", "Fix " + "the bulk discount " * 5, ["S8"]),
    ("bot suffix", "Fix the bulk discount [bot]", ["S1"]),
    ("AI co-author", "Fix the discount\n\nCo-Authored-By: Claude <noreply@anthropic.com>", ["S1"]),
    ("GPT co-author", "Fix the discount\n\nCo-authored-by: GPT-4 <ai@example.com>", ["S1"]),
    ("generated footer", "Fix the discount\n\nGenerated with Claude Code", ["S1"]),
    ("no blank line", "Fix the discount\nThe comparison was wrong.", ["S11"]),
    ("bold tag in the body", "Fix the discount\n\n**Root cause:** off by one.", ["S3"]),
    ("empty", "", ["S12"]),
]


@pytest.mark.parametrize(
    ("text", "expected"), [(t, e) for _, t, e in COMMITS], ids=[n for n, _, _ in COMMITS]
)
def test_commit_table(text: str, expected: list[str]) -> None:
    found = lint_commit_message(text)
    assert codes(found) == expected, [v.render() for v in found]


def test_violations_point_at_the_line_and_say_how_to_fix() -> None:
    text = f"{PROSE}\n\n**Fix:** compare with >=.\n\n{PROOF}\n{CHANGES}"
    (violation,) = lint_description(text)
    assert (violation.code, violation.line, violation.where) == ("S3", 4, "description")
    assert violation.fix
    assert violation.render().startswith("S3 (description line 4): bold inline tag **Fix:**")


def test_commit_violations_are_labelled_commit() -> None:
    (violation,) = lint_commit_message("Fixed it")
    assert violation.where == "commit"
    assert violation.line == 1


def test_title_rules_ignore_the_draft_prefix() -> None:
    assert lint_title("Draft: Apply the bulk discount at the threshold") == []
    assert codes(lint_title("Draft: Fixed the discount.")) == ["S10", "S9"]


@pytest.mark.parametrize(
    ("text", "is_command"),
    [
        ("pytest tests/x.py -v", True),
        ("$ make test", True),
        ("FOO=1 python -m pytest", True),
        (".venv/bin/pytest -q", True),
        ("./run-tests.sh", True),
        ("bulk_discount(5, 10)", False),
        ("5 passed in 0.02s", False),
        ("", False),
    ],
)
def test_looks_like_command(text: str, is_command: bool) -> None:
    assert looks_like_command(text) is is_command
