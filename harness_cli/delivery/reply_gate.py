"""The reply gate: a reviewer hears "Done, updated" only when the wire shows it.

Reference ("Recovering from single operations"): "The reply gate further down the chain, which
sends the reviewer a 'Done, updated' note, remains wired directly to git push exit 0 and never
to anything Claude says about itself." Tried end to end, an exit code the dev-agent made up
was enough to post the model's own "Done, updated: I renamed…" over an unchanged branch. So
the gate takes only evidence read from the remote itself:

- the case branch's sha on the remote before the run and after it (``git ls-remote``) differ,
- the sha after is the one this run's real push sent (exit 0): the commit is ours,
- the reply goes into the discussion it answers, and that discussion's newest reviewer note is
  still the one the run was dispatched for (a newer note was not read by the agent),
- the text is the agent's reply to *that* discussion, never one text for every discussion.

Anything less: no reply to the reviewer, and the operator hears why (one message).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness_cli import components

DONE = "Done, updated"


@dataclass(frozen=True)
class WireEvidence:
    remote_before: str | None
    """``origin/<case branch>`` as ``git ls-remote`` showed it before the agent ran."""
    remote_after: str | None
    """… and after the run's push."""
    pushed_sha: str | None
    """What this run's real push sent, when it exited 0 (None: no successful push)."""

    @property
    def moved_by_this_run(self) -> bool:
        return (
            bool(self.pushed_sha)
            and self.remote_after == self.pushed_sha
            and self.remote_after != self.remote_before
        )

    def why_not(self) -> str:
        """Why the wire does not show a new commit of this run (empty when it does)."""
        if self.moved_by_this_run:
            return ""
        if not self.pushed_sha:
            return "no push of this run reached the remote"
        if self.remote_after != self.pushed_sha:
            return "the remote branch is not at the commit this run pushed"
        return "the remote branch did not move (the push sent nothing new)"


def reply_gate(evidence: WireEvidence, body: str | None, *, note_is_current: bool) -> str | None:
    """The reply for one discussion, or None (no reply)."""

    text = " ".join((body or "").split())
    if not components.enabled("reply_gate"):  # an eval ablation: the agent's word is taken
        return f"{DONE}: {text}" if text else None
    if not evidence.moved_by_this_run or not note_is_current:
        return None
    if not text:
        return None
    sha = (evidence.pushed_sha or "")[:8]
    return f"{DONE} in {sha}: {text}"
