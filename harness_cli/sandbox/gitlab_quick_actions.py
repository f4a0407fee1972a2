"""Quick actions, as GitLab runs them (#28 R12): a line of an MR description or of a note that
starts with ``/command`` is taken out of the text and carried out as whoever sent the text —
for the harness, its own account. GitLab's ``Gitlab::QuickActions::Extractor``: the slash at the
very start of a line (any case), not inside a fenced code block or a ``>>>`` quote; a note made
only of commands is not kept (the API answers 202 with what changed).

The emulator runs the ones an injected text would reach for: approve/unapprove, merge, close/
reopen, label/unlabel, assign_reviewer/unassign_reviewer, draft/ready. Each leaves the system
note GitLab leaves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness_cli.sandbox import gitlab_git, gitlab_reviews
from harness_cli.sandbox.gitlab_model import MergeRequest, Project, User, now_ms
from harness_cli.sandbox.gitlab_state import ApiError, GitLabState

COMMANDS = frozenset(
    {
        "approve", "unapprove", "merge", "close", "reopen", "label", "unlabel",
        "assign_reviewer", "unassign_reviewer", "draft", "ready",
    }
)  # fmt: skip
_SKIP = re.compile(r"^```.*?\n```$|^>>>.*?\n>>>$", re.MULTILINE | re.DOTALL)
_COMMAND = re.compile(
    r"^/(?P<cmd>[a-z_]+)(?:[ ](?P<arg>[^\n]*))?(?:[ \t\r]*\n|$)", re.MULTILINE | re.IGNORECASE
)
_LABEL = re.compile(r'~"([^"]+)"|~(\S+)')
_USER = re.compile(r"@([A-Za-z0-9_.-]+)")


@dataclass(frozen=True)
class Command:
    name: str
    arg: str


def extract(text: str) -> tuple[str, list[Command]]:
    """``text`` without its command lines, and the commands, in order."""
    commands: list[Command] = []
    kept: list[str] = []
    at = 0
    for block in [*_SKIP.finditer(text), None]:
        end = block.start() if block is not None else len(text)
        kept.append(_take(text[at:end], commands))
        if block is not None:
            kept.append(block.group())
            at = block.end()
    return "".join(kept), commands


def _take(part: str, commands: list[Command]) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group("cmd").lower()
        if name not in COMMANDS:
            return match.group()
        commands.append(Command(name, (match.group("arg") or "").strip()))
        return ""

    return _COMMAND.sub(one, part)


def run(
    state: GitLabState, project: Project, mr: MergeRequest, user: User, commands: list[Command]
) -> list[str]:
    """Carry the commands out as ``user``; returns what each did (GitLab's summary)."""
    done: list[str] = []
    for command in commands:
        said = _apply(state, project, mr, user, command)
        if said:
            done.append(said)
            state.add_note(mr, state.users[1], said, discussion=False, system=True)
    return done


def _apply(
    state: GitLabState, project: Project, mr: MergeRequest, user: User, command: Command
) -> str:
    name, arg = command.name, command.arg
    if name == "approve" and user not in mr.approved_by:
        mr.approved_by.append(user)
        return "approved this merge request"
    if name == "unapprove" and user in mr.approved_by:
        mr.approved_by.remove(user)
        return "unapproved this merge request"
    if name == "merge":
        try:
            gitlab_reviews.merge_mr(state, project, mr, user, when_pipeline_succeeds=True)
        except (ApiError, gitlab_git.GitError):
            return ""
        return "merged" if mr.state == "merged" else "enabled an automatic merge"
    if name in ("close", "reopen"):
        return _state(mr, user, name)
    if name in ("label", "unlabel"):
        named = [a or b for a, b in _LABEL.findall(arg)]
        if name == "label":
            mr.labels += [x for x in named if x not in mr.labels]
        else:
            mr.labels = [x for x in mr.labels if named and x not in named]
        return f"{'added' if name == 'label' else 'removed'} {' '.join(named) or 'all'} label"
    if name in ("assign_reviewer", "unassign_reviewer"):
        users = [state.user(u) for u in _USER.findall(arg) if _known(state, u)]
        if name == "assign_reviewer":
            mr.reviewers += [u for u in users if u not in mr.reviewers]
        else:
            mr.reviewers = [u for u in mr.reviewers if users and u not in users]
        return f"{name.replace('_', ' ')} {' '.join(_USER.findall(arg)) or 'all'}"
    if name in ("draft", "ready"):
        bare = re.sub(r"^(?:draft:|\[draft\]|\(draft\)|wip:)\s*", "", mr.title, flags=re.I)
        mr.title = f"Draft: {bare}" if name == "draft" else bare
        return f"marked this merge request as {'draft' if name == 'draft' else 'ready'}"
    return ""


def _state(mr: MergeRequest, user: User, name: str) -> str:
    if name == "close" and mr.state == "opened":
        mr.state, mr.closed_at, mr.closed_by = "closed", now_ms(), user
        return "closed"
    if name == "reopen" and mr.state == "closed":
        mr.state, mr.closed_at, mr.closed_by = "opened", None, None
        return "reopened"
    return ""


def _known(state: GitLabState, username: str) -> bool:
    return any(u.username == username for u in state.users.values())
