"""``dev-agent --mode address_review``: the reviewer's discussions → a change → a reply in each
discussion, only when the wire shows that change on the remote (:mod:`reply_gate`).

The payload names the discussions and, for each, the reviewer note it was dispatched for. The
agent answers each discussion by its id (``"replies": {"<id>": "…"}``); one text is never
copied into every discussion (one it did not answer by id hears what the pushed commits say).
Before replying, the discussions are read again: a discussion resolved meanwhile, or with a
newer reviewer note the agent never saw, gets no reply now (mr-monitor dispatches the newer
note on its own).
"""

from __future__ import annotations

from typing import Any

from harness_cli.delivery import outcome
from harness_cli.delivery.change import change_push_and_mr
from harness_cli.delivery.monitor.decide import is_reviewer_note
from harness_cli.delivery.push.rebase import wire_tip
from harness_cli.delivery.reply_gate import WireEvidence, reply_gate
from harness_cli.delivery.work import Work, worktree_for
from harness_cli.services.gitlab import Discussion, Note
from harness_cli.state import files

NOTE_CHARS = 2000


def run_address_review(work: Work) -> dict[str, Any]:
    wt = worktree_for(work)
    project, iid_text = str(work.args["mr"]).rsplit("!", 1)
    iid = int(iid_text)
    me = files.monitored_mrs().read().bot_username or work.gitlab.whoami()
    wanted = set(map(str, work.args.get("discussions", [])))
    threads = [d for d in work.gitlab.discussions(project, iid) if not wanted or d.id in wanted]
    if not threads:  # resolved or deleted before the run started: nobody is waiting
        return {
            "mode": "address_review",
            "changed": False,
            "pushed": False,
            "message": f"{work.case.id}: the discussions on {work.args['mr']} were resolved "
            "before the dev-agent started; nothing to answer.",
        }
    notes = {str(k): int(v) for k, v in dict(work.args.get("notes") or {}).items()}
    for d in threads:  # a payload of an older harness names no note: the newest one then
        newest = _newest_reviewer_note(d, me)
        notes.setdefault(d.id, newest.id if newest else 0)
    before = wire_tip(wt)
    change = change_push_and_mr(work, wt, "address_review", _job(threads, me))
    evidence = WireEvidence(before, wire_tip(wt), change.pushed_sha if change.pushed else None)
    replies = _replies(change.meta, threads)
    fresh = {d.id: d for d in work.gitlab.discussions(project, iid)} if threads else {}
    answered: list[str] = []
    skipped: dict[str, str] = {}
    for d in threads:
        now = fresh.get(d.id)
        newest = _newest_reviewer_note(now, me) if now is not None else None
        current = now is not None and not now.resolved and newest is not None
        current = current and newest is not None and newest.id == notes.get(d.id)
        text = reply_gate(evidence, replies.get(d.id) or _pushed(change), note_is_current=current)
        if text is not None:
            work.gitlab.reply(project, iid, d.id, text)
            answered.append(d.id)
        else:
            skipped[d.id] = _why(evidence, replies.get(d.id), current)
    return outcome.review_result(work, change, evidence, threads, answered, skipped, me=me)


def _job(threads: list[Discussion], me: str) -> str:
    parts = []
    for d in threads:
        said = "\n".join(
            f"{n.author}: {n.body[:NOTE_CHARS]}" for n in d.notes if not n.system and n.body
        )
        parts.append(f"Discussion {d.id}:\n{said}")
    return (
        "Reviewers left these comments on the MR:\n\n"
        + "\n\n".join(parts)
        + "\n\nAddress each one in the code. In your JSON block, answer every discussion by "
        'its id: "replies": {"<discussion id>": "what you changed for that comment"}. The '
        "harness posts a reply only when your commit is on the remote branch."
    )


def _replies(meta: dict[str, Any], threads: list[Discussion]) -> dict[str, str]:
    """The agent's answer per discussion; a single ``reply`` only when there is one discussion
    (it is then specific to it)."""
    given = meta.get("replies")
    out = {str(k): str(v) for k, v in given.items()} if isinstance(given, dict) else {}
    if not out and len(threads) == 1 and meta.get("reply"):
        out[threads[0].id] = str(meta["reply"])
    return out


def _pushed(change: Any) -> str:
    """#34 item 14: the reply for a discussion the agent did not answer by its id (a single
    ``reply`` for two discussions, ids mangled): the subjects of the commits the wire shows —
    before, a real push for every note left the reviewer with no answer at all. Never the
    agent's text for another discussion; the gate still posts it only after this run's push."""
    subjects = [s.strip() for s in change.commits if s.strip()]
    return f"pushed {'; '.join(subjects)}." if subjects else ""


def _newest_reviewer_note(discussion: Discussion, me: str) -> Note | None:
    found = [n for n in discussion.notes if is_reviewer_note(n, me=me)]
    return max(found, key=lambda n: n.id) if found else None


def _why(evidence: WireEvidence, reply: str | None, current: bool) -> str:
    if not evidence.moved_by_this_run:
        return evidence.why_not()
    if not current:
        return "the discussion was resolved or got a newer note meanwhile"
    return "the agent gave no reply for this discussion" if not reply else ""
