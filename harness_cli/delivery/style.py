"""The style linter for MR descriptions and commit messages: ``sops/STYLE.md`` made mechanical.

The SOP text goes into the prompt (:func:`harness_cli.delivery.mr.compose_prompt_section`) so the
agent writes to it; this module checks what comes back, before anything reaches GitLab. A
description that reads as machine-written costs the whole pipeline the team's trust, so a
violation stops the submission and goes back to the agent with its fix. Pure: text in,
violations out.

=====  ==========================  ==============================================================
Code   Applies to                  Rule (SOP item)
=====  ==========================  ==============================================================
S1     description, commit, title  No AI attribution: a Co-Authored-By (or similar trailer)
                                   naming a model or assistant, "Generated with …", 🤖,
                                   "as an AI", a ``[bot]`` suffix (1)
S2     description, commit body    No fill-in-the-blank headings: "What this MR does", "Why we
                                   need it", ``## Summary`` / ``## Root Cause`` / ``## Testing``,
                                   a bare ``Summary:`` or ``**Summary**`` line (2)
S3     description, commit body    No bold inline tags at a line start: ``**Root cause:**``,
                                   ``__Fix:__``, ``**Risk**:`` (3)
S4     description                 A ``Changes:`` line followed by a concrete bullet list (2)
S5     description                 Continuous prose before the list: a paragraph of at least
                                   six words (2)
S6     description                 Proof of work: a command (in backticks, or the first line of
                                   a fenced or indented block) followed by its output lines (4)
S7     description                 "Verified locally" and the like with no command behind it (4)
S8     commit subject, title       At most 72 characters (5)
S9     commit subject, title       No trailing period (5)
S10    commit subject, title       Imperative mood: "Fix …", not "Fixed"/"Fixes"/"Fixing" (5)
S11    commit message              A blank line between the subject and the body (git's rule)
S12    commit subject, title       Not empty (5)
=====  ==========================  ==============================================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

__all__ = [
    "StyleViolation",
    "lint_commit_message",
    "lint_description",
    "lint_title",
    "strip_attribution",
]

MAX_SUBJECT = 72
MIN_PROSE_WORDS = 6


@dataclass(frozen=True)
class StyleViolation:
    code: str
    line: int
    """1-based line of the offending text; 0 when the text as a whole is at fault."""
    message: str
    fix: str
    where: str = "description"

    def render(self) -> str:
        at = f"{self.where} line {self.line}" if self.line else self.where
        return f"{self.code} ({at}): {self.message} — {self.fix}"


def _set(words: str, sep: str = " ") -> frozenset[str]:
    return frozenset(words.split(sep))


# -- S1: attribution ------------------------------------------------------------------------------
_AI_NAME = re.compile(
    r"claude|anthropic|chatgpt|\bgpt|openai|copilot|gemini|\bbard\b|llama|mistral|codex|cursor"
    r"|devin|\bllm\b|language model|assistant|\bai\b|\ba\.i\.|\bbot\b|\[bot\]",
    re.IGNORECASE,
)
_TRAILER = re.compile(
    r"^\s*(co-authored-by|signed-off-by|assisted-by|generated-by|helped-by|authored-by)\s*:\s*(.*)$",
    re.IGNORECASE,
)
_ATTRIBUTION = re.compile(
    r"🤖|\bas an ai\b|\bas an? (?:large )?language model\b|\bi(?: am|'m) an ai\b"
    r"|claude\.ai/code|noreply@anthropic\.com",
    re.IGNORECASE,
)
_GENERATED_AT_START = re.compile(r"^\W*generated (?:with|by|using)\b", re.IGNORECASE)
_GENERATED_BY_AI = re.compile(r"\bgenerated (?:with|by|using)\b(.*)$", re.IGNORECASE)
_BOT_SUFFIX = re.compile(r"\[bot\]\W*$", re.IGNORECASE)


def _attribution(
    lines: list[str], where: str, *, first_line_is_subject: bool
) -> list[StyleViolation]:
    out: list[StyleViolation] = []
    fix = "delete it: the change belongs to the team, not to a tool"
    for no, line in enumerate(lines, 1):
        trailer = _TRAILER.match(line)
        generated = _GENERATED_BY_AI.search(line)
        if trailer and _AI_NAME.search(trailer.group(2)):
            msg = f"{trailer.group(1)} trailer names a model or assistant"
        elif _ATTRIBUTION.search(line):
            msg = "AI attribution or self-reference"
        elif _GENERATED_AT_START.match(line) or (generated and _AI_NAME.search(generated.group(1))):
            msg = '"Generated with/by" footer'
        elif no == 1 and first_line_is_subject and _BOT_SUFFIX.search(line):
            msg = "[bot] suffix on the subject"
        else:
            continue
        out.append(StyleViolation("S1", no, msg, fix, where))
    return out


# -- S2 / S3: template headings and bold tags ---------------------------------------------------
_SECTION_NAMES = _set(
    "summary|description|overview|context|background|motivation|problem|problem statement"
    "|root cause|cause|analysis|fix|the fix|solution|proposed solution|approach|implementation"
    "|changes|changes made|what changed|testing|tests|test plan|testing done|how to test"
    "|verification|risk|risks|impact|notes|additional notes|screenshots|checklist"
    "|related issues|references|what|why|how",
    "|",
)
_LABEL_NAMES = _SECTION_NAMES - {
    "changes",
    "testing",
    "tests",
    "verification",
    "notes",
    "references",
    "implementation",
}
"""A bare ``Word:`` line is a template label for these; ``Changes:`` is the list the SOP wants."""
_PHRASE = (
    r"(?:what (?:this|the) (?:mr|pr|merge request|change|patch) does"
    r"|what does this (?:mr|pr|merge request|change|patch) do"
    r"|why (?:we need it|is this needed|this is needed|it is needed|this change)"
    r"|how (?:to test|was this tested|it was tested|has this been tested|to reproduce)"
    r"|what changed|type of change)"
)
_TEMPLATE_LINE = re.compile(rf"{_PHRASE}(?:\s*[/&,]\s*(?:and\s+)?{_PHRASE})*[\s:?.]*", re.I)
_ATX = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)[\s#]*$")
_BOLD_LINE = re.compile(r"^\s*(\*\*|__)(.+?)\1\s*:?\s*$")
_LABEL_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z ]{0,30}):\s*$")
_BOLD_TAG = re.compile(
    r"^\s*(?:[-*+]\s+|\d+[.)]\s+)?(\*\*|__)\s*([A-Za-z][A-Za-z '-]{0,39}?)\s*(?::\s*\1|\1\s*:)"
)


def _norm(text: str) -> str:
    return re.sub(r"[^a-z ]+", "", text.lower()).strip()


def _headings_and_tags(
    lines: list[str], code: list[bool], where: str, start: int = 0
) -> list[StyleViolation]:
    out: list[StyleViolation] = []
    for no, line in enumerate(lines, 1):
        if no <= start or code[no - 1]:
            continue
        tag = _BOLD_TAG.match(line)
        if tag:
            label = tag.group(2).strip()
            mark = tag.group(1)
            msg = f"bold inline tag {mark}{label}:{mark} in front of a paragraph"
            fix = "drop the tag and say it in the sentence itself"
            out.append(StyleViolation("S3", no, msg, fix, where))
            continue
        bare = re.sub(r"^[\s#*_>]+|[\s#*_]+$", "", line)
        heading = _ATX.match(line)
        bold = _BOLD_LINE.match(line)
        label = _LABEL_LINE.match(line)
        if (
            _TEMPLATE_LINE.fullmatch(bare)
            or (heading and _norm(heading.group(1)) in _SECTION_NAMES)
            or (bold and _norm(bold.group(2)) in _SECTION_NAMES)
            or (label and _norm(label.group(1)) in _LABEL_NAMES)
        ):
            msg = f"fill-in-the-blank heading {line.strip()!r}"
            fix = "write it as continuous prose; only the Changes: list is a list"
            out.append(StyleViolation("S2", no, msg, fix, where))
    return out


# -- code blocks, commands, proof of work -----------------------------------------------------
_FENCE = re.compile(r"^\s*(```|~~~)")
_INDENTED = re.compile(r"^(?: {4}|\t)\s*\S")
_COMMANDS = _set(
    "pytest python python3 py.test make npm pnpm yarn npx node go cargo bash sh zsh tox nox uv"
    " poetry pip ruff mypy flake8 black curl git docker kubectl mvn gradle ./gradlew bundle rake"
    " rspec jest dotnet php composer psql mysql sqlite3 harness pre-commit java ruby perl rustc"
    " gcc clang cmake bazel helm terraform jq grep"
)
_BACKTICK = re.compile(r"`([^`\n]+)`")
_CLAIM = re.compile(
    r"\b(?:verified|tested|checked|confirmed) (?:it |this |everything )?"
    r"(?:locally|manually|by hand)"
    r"|\bmanually (?:verified|tested|checked)|\bworks (?:fine |well )?(?:on|for) my machine",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+(\S.*)$")
_CHANGES = re.compile(r"^\s*changes\s*:\s*$", re.IGNORECASE)


def looks_like_command(text: str) -> bool:
    """``$ pytest -q``, ``pytest tests/x.py -v``, ``FOO=1 make test``, ``.venv/bin/pytest``."""
    words = text.strip().split()
    if words and words[0] in ("$", "%", ">>>"):
        return len(words) > 1
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
        words = words[1:]
    if not words:
        return False
    first = words[0]
    return first in _COMMANDS or PurePosixPath(first).name in _COMMANDS or first.startswith("./")


def _code_mask(lines: list[str]) -> list[bool]:
    mask: list[bool] = []
    fenced = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            mask.append(True)
            fenced = not fenced
            continue
        prev_blank_or_code = i == 0 or not lines[i - 1].strip() or mask[i - 1]
        mask.append(fenced or bool(_INDENTED.match(line) and prev_blank_or_code))
    return mask


def _blocks(lines: list[str], code: list[bool]) -> dict[int, list[str]]:
    """Fenced, indented and quoted blocks by first line index → their non-empty content lines."""
    blocks: dict[int, list[str]] = {}
    i = 0
    while i < len(lines):
        quoted = lines[i].lstrip().startswith(">")
        if not (code[i] or quoted):
            i += 1
            continue
        start, body = i, []
        fenced = bool(_FENCE.match(lines[i]))
        i += 1 if fenced else 0
        while i < len(lines):
            line = lines[i]
            if fenced and _FENCE.match(line):
                i += 1
                break
            if not fenced and not (code[i] if not quoted else line.lstrip().startswith(">")):
                break
            text = line.lstrip().removeprefix(">") if quoted else line
            if text.strip():
                body.append(text.strip())
            i += 1
        blocks[start] = body
    return blocks


def _has_proof(lines: list[str], code: list[bool]) -> bool:
    blocks = _blocks(lines, code)
    for body in blocks.values():
        # A command line, then at least one line of its output (comments are neither).
        content = [ln for ln in body if not ln.startswith("# ")]
        first = next((i for i, ln in enumerate(content) if looks_like_command(ln)), None)
        if first is not None and any(not looks_like_command(ln) for ln in content[first + 1 :]):
            return True
    for i, line in enumerate(lines):
        if code[i] or not any(looks_like_command(m) for m in _BACKTICK.findall(line)):
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if blocks.get(j):
            return True
    return False


# -- the public checks --------------------------------------------------------------------------
def lint_description(text: str) -> list[StyleViolation]:
    lines = text.splitlines()
    code = _code_mask(lines)
    out = _attribution(lines, "description", first_line_is_subject=True)
    shape = _headings_and_tags(lines, code, "description")
    out += shape
    # A tagged or templated line is not the prose the SOP asks for, however long it is.
    prose_code = [c or any(v.line == i for v in shape) for i, c in enumerate(code, 1)]
    changes = next((i for i, ln in enumerate(lines) if not code[i] and _CHANGES.match(ln)), None)
    out += _changes_list(lines, changes)
    prose_end = changes if changes is not None else len(lines)
    if not _has_prose(lines[:prose_end], prose_code[:prose_end]):
        msg = "no prose paragraph before the Changes: list"
        fix = "open with a few sentences on what was wrong and what this change does about it"
        out.append(StyleViolation("S5", 0, msg, fix))
    if not _has_proof(lines, code):
        msg = "no proof of work: no command followed by its output"
        fix = "give the exact command (`pytest tests/test_x.py -v`) and three lines of its output"
        out.append(StyleViolation("S6", 0, msg, fix))
        fix = "replace the claim with the command you ran and its output"
        for no, line in enumerate(lines, 1):
            claim = _CLAIM.search(line)
            if claim:
                out.append(StyleViolation("S7", no, f"{claim.group(0)!r} with no command", fix))
    return sorted(out, key=lambda v: (v.line, v.code))


def _changes_list(lines: list[str], at: int | None) -> list[StyleViolation]:
    fix = "end with a `Changes:` line and one bullet per concrete change (file, behaviour)"
    if at is None:
        return [StyleViolation("S4", 0, "no `Changes:` list", fix)]
    j = at + 1
    while j < len(lines) and not lines[j].strip():
        j += 1
    bullets: list[tuple[int, str]] = []
    while j < len(lines):
        bullet = _BULLET.match(lines[j])
        if bullet:
            bullets.append((j + 1, bullet.group(1)))
        elif not lines[j].startswith((" ", "\t")) or not bullets:
            break
        j += 1
    if not bullets:
        return [StyleViolation("S4", at + 1, "`Changes:` is not followed by a bullet list", fix)]
    return [
        StyleViolation("S4", no, f"vague bullet {body!r}", "name what changed, and where")
        for no, body in bullets
        if len(body.split()) < 2
    ]


def _has_prose(lines: list[str], code: list[bool]) -> bool:
    words = 0
    for line, is_code in zip(lines, code, strict=True):
        plain = line.strip()
        special = is_code or _BULLET.match(line) or plain.startswith(("#", ">", "|"))
        if not plain or special:
            words = 0
            continue
        words += len(plain.split())
        if words >= MIN_PROSE_WORDS:
            return True
    return False


_NOT_IMPERATIVE = _set(
    "fixes adds updates changes removes makes uses moves renames improves implements refactors"
    " introduces handles ensures allows prevents corrects bumps deletes creates replaces reverts"
    " merges supports enables disables converts cleans drops applies sets gets returns avoids"
    " stops starts skips keeps adjusts documents tests resolves addresses"
)
_ED_VERBS = _set(
    "need feed seed speed embed shed bleed breed proceed exceed succeed red bed shred wed"
)
_ING_VERBS = _set("bring string swing sting cling fling spring")
_SCOPE = re.compile(r"^(?:draft:\s*)?(?:[\w./-]+(?:\([^)]*\))?!?:\s+)?", re.IGNORECASE)


def lint_title(text: str, *, where: str = "title") -> list[StyleViolation]:
    """The subject rules (S1, S8–S10, S12) on an MR title or a commit subject."""
    subject = text.strip()
    if subject.lower().startswith("draft:"):
        subject = subject[len("draft:") :].strip()
    if not subject:
        return [StyleViolation("S12", 1, "empty subject", "say what the change does", where)]
    out = _attribution([subject], where, first_line_is_subject=True)
    if len(subject) > MAX_SUBJECT:
        msg = f"subject is {len(subject)} characters (at most {MAX_SUBJECT})"
        out.append(StyleViolation("S8", 1, msg, "shorten it; details go in the body", where))
    if subject.endswith("."):
        out.append(StyleViolation("S9", 1, "subject ends with a period", "drop it", where))
    rest = _SCOPE.sub("", subject, count=1)
    first = re.sub(r"[^A-Za-z]", "", rest.split()[0]).lower() if rest.split() else ""
    if (
        first in _NOT_IMPERATIVE
        or (first.endswith("ed") and len(first) > 3 and first not in _ED_VERBS)
        or (first.endswith("ing") and len(first) > 4 and first not in _ING_VERBS)
        or re.match(r"this (commit|mr|pr|change|patch|merge request)\b", rest, re.IGNORECASE)
    ):
        msg = f"subject is not in the imperative mood ({rest.split()[0]!r})"
        fix = 'start with the verb as a command: "Fix …", "Add …", "Apply …"'
        out.append(StyleViolation("S10", 1, msg, fix, where))
    return out


def lint_commit_message(text: str) -> list[StyleViolation]:
    lines = text.strip("\n").splitlines()
    if not lines:
        return lint_title("", where="commit")
    out = lint_title(lines[0], where="commit")
    out = [v for v in out if v.code != "S1"]  # the full-message pass below covers the subject
    out += _attribution(lines, "commit", first_line_is_subject=True)
    if len(lines) > 1 and lines[1].strip():
        msg = "no blank line between the subject and the body"
        out.append(StyleViolation("S11", 2, msg, "insert an empty second line", "commit"))
    out += _headings_and_tags(lines, _code_mask(lines), "commit", start=1)
    return sorted(out, key=lambda v: (v.line, v.code))


def strip_attribution(text: str) -> str:
    """The commit message without what S1 flags: attribution trailers naming a model,
    "Generated with …" footers, 🤖 lines and a ``[bot]`` suffix on the subject. The only rewrite
    the harness makes on its own: what remains is the author's text, unchanged."""
    lines = text.strip("\n").splitlines()
    flagged = {v.line for v in _attribution(lines, "commit", first_line_is_subject=True)}
    kept: list[str] = []
    for no, line in enumerate(lines, 1):
        if no == 1 and no in flagged and _BOT_SUFFIX.search(line):
            stripped = _BOT_SUFFIX.sub("", line).rstrip()
            if stripped and not _attribution([stripped], "commit", first_line_is_subject=True):
                kept.append(stripped)
                continue
        if no not in flagged:
            kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept) + "\n" if kept else ""
