"""``followup_transcript_NNN.md``: one file per followup turn, written by the harness.

Format: YAML front matter between ``---`` lines (``TranscriptMeta``), then Markdown — one
``## <who> · <ts> · <where>`` section per reply answered and a ``## harness`` section with the
answer. A consolidation marks the transcripts it folded into TASK.md (``consolidated_at``);
marked transcripts stay on disk (the gap analyzer and a human may read them) but are no longer
fed raw to the followup agent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness_cli.state.store import atomic_write_text

PATTERN = "followup_transcript_*.md"
_NAME = re.compile(r"^followup_transcript_(\d+)\.md$")
_FRONT = re.compile(r"\A---\n(.*?)\n---\n?", re.DOTALL)


class TranscriptMeta(BaseModel):
    model_config = ConfigDict(extra="allow")

    schema_version: int = 1
    turn: int = 0
    case_id: str = ""
    at: datetime | None = None
    trigger: str = ""
    """What woke the followup: operator_reply, ticket_reply, manual."""
    thread: str = ""
    """``channel/thread_ts`` the replies came from."""
    replies: list[str] = Field(default_factory=list)
    """The ts of each reply this turn answered."""
    posted_ts: str | None = None
    """The harness's answer in the case thread (None: not posted, e.g. ``--no-post``)."""
    approval: bool = False
    """The turn handed the case to the dev-agent instead of calling the model."""
    prompt_chars: int = 0
    """Size of the followup prompt this turn sent (0: no model call, e.g. an approval)."""
    left_out: list[str] = Field(default_factory=list)
    """Unconsolidated transcripts the prompt budget left out (named in the prompt instead)."""
    consolidated_at: datetime | None = None
    """Set when a consolidation folded this transcript into TASK.md."""
    consolidated_into: str | None = None
    """``TASK.md@<sha256 prefix>`` of the TASK.md that carries it since."""


@dataclass
class Transcript:
    path: Path
    number: int
    meta: TranscriptMeta
    body: str

    @property
    def consolidated(self) -> bool:
        return self.meta.consolidated_at is not None

    @property
    def size(self) -> int:
        """Bytes of the conversation itself (the body), what the 5 KB signal counts."""
        return len(self.body.encode("utf-8"))


def name_for(number: int) -> str:
    return f"followup_transcript_{number:03d}.md"


def parse(text: str) -> tuple[TranscriptMeta, str]:
    """Front matter and body; a file without valid front matter is all body (a transcript
    written by hand, or an older format) and counts as not consolidated."""
    match = _FRONT.match(text)
    if match:
        try:
            data = yaml.safe_load(match.group(1))
            if isinstance(data, dict):
                return TranscriptMeta.model_validate(data), text[match.end() :]
        except (yaml.YAMLError, ValidationError):
            pass
    return TranscriptMeta(), text


def render(meta: TranscriptMeta, body: str) -> str:
    front = yaml.safe_dump(
        meta.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=100
    )
    return f"---\n{front}---\n{body.lstrip(chr(10))}"


def read(path: Path) -> Transcript | None:
    match = _NAME.match(path.name)
    if not match:
        return None
    meta, body = parse(path.read_text(encoding="utf-8"))
    return Transcript(path, int(match.group(1)), meta, body)


def list_all(case_dir: Path) -> list[Transcript]:
    """Every numbered transcript of the case, in turn order."""
    found = [t for p in case_dir.glob(PATTERN) if (t := read(p)) is not None]
    return sorted(found, key=lambda t: t.number)


def unconsolidated(case_dir: Path) -> list[Transcript]:
    return [t for t in list_all(case_dir) if not t.consolidated]


def next_number(case_dir: Path) -> int:
    numbers = [t.number for t in list_all(case_dir)]
    return max(numbers, default=0) + 1


def write(case_dir: Path, meta: TranscriptMeta, body: str) -> Path:
    """Write the next transcript, headed ``# Follow-up NNN — CASE`` (callers serialize per
    case: the followup workflow lock)."""
    number = next_number(case_dir)
    meta.turn = number
    path = case_dir / name_for(number)
    heading = f"# Follow-up {number:03d} — {meta.case_id}\n\n"
    atomic_write_text(path, render(meta, heading + body.strip() + "\n"))
    return path


def mark_consolidated(items: list[Transcript], at: datetime, into: str) -> None:
    for item in items:
        fresh = read(item.path)
        if fresh is None or fresh.consolidated:
            continue
        fresh.meta.consolidated_at = at
        fresh.meta.consolidated_into = into
        atomic_write_text(item.path, render(fresh.meta, fresh.body))
