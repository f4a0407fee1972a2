"""What each reviewer may see, staged in an emptied folder of its own — isolation by construction,
not by instruction.

- The red team (G5) "is shown only the original problem statement and the final conclusion. It
  gets no intermediate reasoning, no evidence trail and no earlier rounds": ``problem.md`` and
  ``conclusion.md``, nothing else.
- The adversarial reviewer "reads the full investigation narrative" and "doesn't see the
  investigator's prompt": every iteration's prose and report, the locked slate (as recorded,
  never the case file) and the investigator's own notes — never a prompt or a transcript.

The folder lives outside the workspace and the harness home, and every path of the case, the
workspace and the home is replaced in what is staged: a reviewer is given no way back.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from harness_cli import paths
from harness_cli.agents import sandbox

HIDDEN_PATH = "<case folder>"


@dataclass(frozen=True)
class Narrative:
    """The investigation as the adversarial reviewer reads it."""

    slate: str
    """The locked slate's JSON, from the record."""
    iterations: tuple[tuple[int, str], ...]
    """(iteration, the model's whole output: prose and completion report), oldest first."""
    notes: str = ""
    """What the investigator wrote into ANALYSIS.md itself."""

    def text(self) -> str:
        parts = [f"### Iteration {n}\n\n{body.strip()}" for n, body in self.iterations]
        if self.notes.strip():
            parts.append(f"### The investigator's notes (ANALYSIS.md)\n\n{self.notes.strip()}")
        return "\n\n".join(parts)


@dataclass
class Staged:
    """A reviewer's folder and what was put in it (name → sha256), for the review record."""

    dir: Path
    files: dict[str, str] = field(default_factory=dict)

    def put(self, name: str, text: str) -> None:
        path = self.dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        self.files[name] = hashlib.sha256(text.encode()).hexdigest()


def scrub(text: str, hidden: Sequence[Path]) -> str:
    """Every hidden path (resolved or as given), longest first, becomes ``<case folder>``."""
    forms = sorted({str(p) for h in hidden for p in (h, h.resolve())}, key=len, reverse=True)
    for form in forms:
        if form and form != "/":
            text = text.replace(form, HIDDEN_PATH)
    return text


def hidden_paths(case_dir: Path) -> tuple[Path, ...]:
    return (case_dir, paths.cases_root(), paths.workspace(), paths.home())


@contextmanager
def staged(role: str, case_dir: Path) -> Iterator[Staged]:
    """An empty folder for one reviewer call, removed afterwards: the same path each time this
    role reviews this case (its name is a digest of both, so it says nothing of the case).

    The folder is in the reviewer's prompt (its working directory), ahead of what it is asked:
    at one path, a review of unchanged material is the same prompt and the prompt cache serves
    it whole (#22). It is emptied before use, so nothing of an earlier review is left in it."""
    role = re.sub(r"[^a-z-]", "", role)
    digest = hashlib.sha256(f"{role}\0{case_dir.resolve()}".encode()).hexdigest()[:16]
    with sandbox.private_folder(f"{role}-{digest}", prefix=f"harness-{role}-") as folder:
        yield Staged(folder)


def stage_red_team(stage: Staged, problem: str, conclusion: str, hidden: Sequence[Path]) -> None:
    stage.put("problem.md", scrub(problem, hidden).strip() + "\n")
    stage.put("conclusion.md", scrub(conclusion, hidden).strip() + "\n")


def stage_adversarial(stage: Staged, narrative: Narrative, hidden: Sequence[Path]) -> None:
    stage.put("slate.json", scrub(narrative.slate, hidden).strip() + "\n")
    for n, body in narrative.iterations:
        stage.put(f"iterations/{n:02d}.md", scrub(body, hidden).strip() + "\n")
    if narrative.notes.strip():
        stage.put("notes.md", scrub(narrative.notes, hidden).strip() + "\n")
