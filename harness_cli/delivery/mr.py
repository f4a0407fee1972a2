"""Composing and submitting the merge request: the style SOP in, a linted MR out.

- :func:`compose_prompt_section` reads ``sops/STYLE.md`` every time it is called (the packaged
  one when the operator has none): operators edit that file and the next MR follows it, with
  no restart (reference: "A style guide that keeps output from reading as machine-written").
- :func:`submit_mr` lints the title, description and commit messages first, and scans the
  title and description for secrets as a push is scanned; any violation raises
  :class:`StyleRejected` and nothing reaches GitLab. The MR is a Draft unless a passing
  acceptance record exists for exactly the pushed head, and it is marked ready only then. A
  second submission for the same branch adopts the open MR (GitLab's 409) and updates it.
- The proof of work in the description is the harness's, from the acceptance record of the
  head (:mod:`harness_cli.delivery.proof`); the model's own command blocks are dropped.
- An MR the harness did not open (``mr-monitor --watch``) keeps its human title and
  description: the proof of work goes into a note instead.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from harness_cli import resources
from harness_cli.config import Thresholds
from harness_cli.delivery.acceptance import AcceptanceRecord, accepts_head
from harness_cli.delivery.proof import compose_description, render_proof
from harness_cli.delivery.secret_scan import scan_text
from harness_cli.delivery.style import (
    StyleViolation,
    lint_commit_message,
    lint_description,
    lint_title,
)
from harness_cli.errors import ConfigError, PolicyRefused
from harness_cli.faults import crash_point
from harness_cli.logs import event
from harness_cli.services.gitlab import GitLab, MergeRequest
from harness_cli.state import files
from harness_cli.state.models import MonitoredMr, MonitoredMrs
from harness_cli.workspace import registry
from harness_cli.workspace.case import CaseMr

__all__ = [
    "STYLE_SOP",
    "StyleRejected",
    "SubmitResult",
    "compose_prompt_section",
    "submit_mr",
]

log = logging.getLogger("harness.delivery.mr")

STYLE_SOP = "STYLE.md"
DRAFT_PREFIX = "Draft: "


class StyleRejected(PolicyRefused):
    """The MR or a commit message breaks the style SOP; nothing was submitted. The caller sends
    :meth:`feedback` back to the agent."""

    def __init__(self, violations: list[StyleViolation]) -> None:
        codes = ", ".join(sorted({v.code for v in violations}))
        super().__init__(
            f"the MR breaks the style SOP ({len(violations)} problems: {codes}); nothing was sent",
            hint="the violations go back to the agent to rewrite",
        )
        self.violations = violations

    def feedback(self) -> str:
        return "\n".join(f"- {v.render()}" for v in self.violations)


@dataclass
class SubmitResult:
    mr: MergeRequest
    ready: bool
    """Not a draft: a passing acceptance record exists for the MR's current head."""
    adopted: bool
    """GitLab already had an open MR for the branch; it was updated instead of created."""

    @property
    def iid(self) -> int:
        return self.mr.iid

    @property
    def web_url(self) -> str:
        return self.mr.web_url

    @property
    def key(self) -> str:
        return MonitoredMrs.key(self.mr.project, self.mr.iid)


def compose_prompt_section(sops_dir: Path) -> str:
    """The style SOP as the prompt section the dev-agent writes its commit message and MR
    description under; read from disk on every call."""

    found = resources.sop(Path(sops_dir), STYLE_SOP)  # the operator's, else the packaged one
    path = found.path if found else Path(sops_dir) / STYLE_SOP
    try:
        sop = path.read_text(encoding="utf-8").strip()
    except OSError:
        raise ConfigError(
            f"style SOP {path} not found",
            hint="restore sops/STYLE.md (or fix sops_dir in harness.yaml)",
        ) from None
    return (
        "## Writing the commit message and the MR description\n\n"
        "Follow this SOP. The harness checks the text before anything is sent and returns "
        "every violation to you to fix.\n\n" + sop + "\n"
    )


def _lint(title: str, description: str, commit_messages: list[str]) -> list[StyleViolation]:
    found = lint_title(title) + lint_description(description)
    for n, message in enumerate(commit_messages, 1):
        found += [
            StyleViolation(v.code, v.line, v.message, v.fix, f"commit {n}")
            for v in lint_commit_message(message)
        ]
    return found


def _secrets(title: str, description: str) -> list[StyleViolation]:
    """#28 R5: the MR's title and description leave like a push does, so they get the push's
    scan (the harness's secrets in any encoding or split across lines, token shapes); a hit
    goes back to the agent to rewrite — what was found is named, never shown."""
    found = scan_text("title", title) + scan_text("description", description)
    return [
        StyleViolation("SECRET", f.line, f"carries {f.kind}", "leave it out entirely", f.path)
        for f in found
    ]


def _bare(title: str) -> str:
    stripped = title.strip()
    while stripped.lower().startswith(("draft:", "wip:")):
        stripped = stripped.split(":", 1)[1].strip()
    return stripped


def submit_mr(
    gitlab: GitLab,
    *,
    project: str,
    source_branch: str,
    target_branch: str,
    title: str,
    description: str,
    commit_messages: list[str],
    case_id: str,
    case_dir: Path,
    acceptance: AcceptanceRecord | None,
    head_sha: str,
    thresholds: Thresholds,
    agent_text: bool = True,
) -> SubmitResult:
    """Lint, then create (or adopt) the MR, set draft/ready from the acceptance record, register
    it in monitored-mrs.json and in the case's ``case.json``. ``description`` is the model's
    prose; the proof of work is appended here, from ``acceptance``. ``agent_text=False``: the
    title and description are GitLab's current ones sent again (a new proof of work), not new
    words — already out, and scanned when they were new."""
    # the model's own words, before the harness's proof (its check output is redacted)
    violations = _secrets(title, description) if agent_text else []
    description = compose_description(description, acceptance, head_sha)
    violations += _lint(title, description, commit_messages)
    if violations:
        event(
            log,
            "mr_style_rejected",
            case_id=case_id,
            branch=source_branch,
            codes=sorted({v.code for v in violations}),
        )
        raise StyleRejected(violations)
    bare = _bare(title)
    accepted = accepts_head(acceptance, head_sha)
    mr = gitlab.create_mr(
        project,
        source_branch=source_branch,
        target_branch=target_branch,
        title=bare,
        description=description,
        draft=not accepted,
    )
    crash_point("delivery.mr_opened")  # open (or adopted) on the forge, not yet ready/recorded
    # Ready only if GitLab's view of the head is the accepted commit: a push that landed after
    # the acceptance run (or one GitLab has not seen yet) keeps the MR a draft.
    ready = accepted and mr.sha == head_sha
    adopted = mr.adopted  # update_mr returns a fresh read, which no longer says so
    wanted_title = bare if ready else DRAFT_PREFIX + bare
    if adopted and _humans(mr):
        # not the harness's MR: its title and description are the team's words
        gitlab.note(project, mr.iid, render_proof(acceptance, head_sha))
    elif mr.title != wanted_title or mr.description != description:
        mr = gitlab.update_mr(project, mr.iid, title=wanted_title, description=description)
    _register(mr, case_id=case_id, case_dir=case_dir, head_sha=head_sha)
    _record_on_case(mr, case_id, thresholds)
    event(
        log,
        "mr_submitted",
        case_id=case_id,
        mr=mr.key,
        adopted=adopted,
        ready=ready,
        head_sha=head_sha,
    )
    return SubmitResult(mr=mr, ready=ready, adopted=adopted)


def back_to_draft(gitlab: GitLab, project: str, branch: str) -> list[str]:
    """The harness's open MRs from ``branch`` become Drafts again (#21 p2: a push refused by the
    secret scan leaves the MR Draft, even one that was ready on an earlier head, since the
    review or fix it waits for will not arrive). Returns the MR keys it changed."""
    changed: list[str] = []
    for key, entry in files.monitored_mrs().read().mrs.items():
        if entry.project != project or entry.source_branch != branch or entry.adopted:
            continue
        current = gitlab.get_mr(project, entry.iid)
        if current.state == "opened" and not current.title.lower().startswith(("draft:", "wip:")):
            gitlab.update_mr(project, entry.iid, title=DRAFT_PREFIX + _bare(current.title))
            event(log, "mr_back_to_draft", mr=key, branch=branch)
            changed.append(key)
    return changed


def _humans(mr: MergeRequest) -> bool:
    """An MR mr-monitor was told to watch (``--watch``) rather than one the harness opened."""
    entry = files.monitored_mrs().read().mrs.get(MonitoredMrs.key(mr.project, mr.iid))
    return entry is not None and entry.adopted


def _register(mr: MergeRequest, *, case_id: str, case_dir: Path, head_sha: str) -> None:
    key = MonitoredMrs.key(mr.project, mr.iid)
    with files.monitored_mrs().update() as state:
        entry = state.mrs.get(key)
        if entry is None:
            entry = MonitoredMr(project=mr.project, iid=mr.iid, case_id=case_id, case_dir="")
            state.mrs[key] = entry
        # CI status, fix-ci attempts and a pause survive a re-submission of the same MR.
        entry.case_id = case_id
        entry.case_dir = str(case_dir)
        entry.web_url = mr.web_url
        entry.source_branch = mr.source_branch
        entry.last_sha = mr.sha or head_sha
        entry.state = mr.state or "opened"


def _record_on_case(mr: MergeRequest, case_id: str, thresholds: Thresholds) -> None:
    with registry.update_case(case_id, thresholds, f"MR {mr.key}") as case:
        for known in case.mrs:
            if known.project == mr.project and known.iid == mr.iid:
                known.web_url = mr.web_url
                known.state = mr.state or known.state
                break
        else:
            case.mrs.append(
                CaseMr(project=mr.project, iid=mr.iid, web_url=mr.web_url, state=mr.state)
            )
