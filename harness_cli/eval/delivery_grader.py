"""The grader of a delivery case: what GitLab, Slack and the case folder show at the end
(``eval.delivery_driver`` gathers it), against the case's ``expect.delivery``."""

from __future__ import annotations

from harness_cli.eval.cases import LibraryCase, Observed


def delivery_problems(case: LibraryCase, seen: Observed) -> list[str]:
    e = case.expect.delivery
    assert e is not None
    d = seen.delivery
    bad: list[str] = []

    def want(ok: bool, what: str) -> None:
        if not ok:
            bad.append(what)

    want(not seen.unmatched, f"the model script left requests unmatched: {seen.unmatched[:2]}")
    if e.status is not None:
        want(seen.status == e.status, f"case status {seen.status!r}, expected {e.status!r}")
    if e.mr_state is not None:
        want(d.get("mr_state") == e.mr_state, f"MR {d.get('mr_state')!r}, expected {e.mr_state!r}")
    if e.mr_draft is not None:
        want(
            bool(d.get("draft")) == e.mr_draft, f"MR draft={d.get('draft')}, expected {e.mr_draft}"
        )
    if e.acceptance is not None:
        got = d.get("acceptance") or "none"
        want(got == e.acceptance, f"acceptance {got!r}, expected {e.acceptance!r}")
    if e.pushed is not None:
        want(bool(d.get("pushed")) == e.pushed, f"pushed={d.get('pushed')}, expected {e.pushed}")
    if e.last_pipeline is not None:
        last = (d.get("pipelines") or ["none"])[-1]
        want(last == e.last_pipeline, f"the newest pipeline is {last!r}, not {e.last_pipeline!r}")
    replies = "\n".join(d.get("replies", []))
    for text in e.replies_contain:
        want(text in replies, f"no reply says {text!r}")
    for text in e.replies_lack:
        want(text not in replies, f"a reply says {text!r}")
    dm = "\n".join(seen.dm)
    for text in e.dm_contains:
        want(text in dm, f"the DMs lack {text!r}")
    for text in e.dm_lacks:
        want(text not in dm, f"the DMs have {text!r}")
    branch = str(d.get("branch_text", ""))
    for text in e.branch_contains:
        want(text in branch, f"the pushed branch lacks {text!r}")
    touched = set(d.get("changed_files", []))
    for path in e.forbidden_files:
        want(path not in touched, f"the branch touches {path}")
    for c in seen.commands:
        allowed = any(part in c["command"] for part in e.commands_may_fail)
        said = c["said"][:120] or "no result"
        want(
            c["fate"] == "ran" or allowed, f"the command `{c['command'][:60]}` {c['fate']}: {said}"
        )
    return bad
