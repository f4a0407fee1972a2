"""One message per dev-agent run, for the operator: what CI failed, what the reviewer asked,
what changed, with the MR link and the case id.

Reference, Layer 5: the case thread's placeholder "finally resolves to Done or Failed:
<reason>", and terminal events are "threaded under the case where one applies". A run used to
post its status line *and* "MR opened: <url>" (the same link twice), and "the agent changed
nothing" could land top level with no case id. Each runner here returns its result with one
``message``; :mod:`harness_cli.delivery.run` puts it in the closing edit of the status message,
or — when the case has no thread — posts it once through :mod:`harness_cli.outbox.notify`.
Every message starts with the case id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness_cli.delivery.monitor.decide import is_reviewer_note
from harness_cli.errors import HarnessError
from harness_cli.state import files
from harness_cli.workspace import registry

if TYPE_CHECKING:
    from harness_cli.delivery.change import Change
    from harness_cli.delivery.push.recovery import PushOutcome
    from harness_cli.delivery.reply_gate import WireEvidence
    from harness_cli.delivery.work import Work
    from harness_cli.services.gitlab import Discussion

QUOTE_CHARS = 160


def quote(text: str, limit: int = QUOTE_CHARS) -> str:
    flat = " ".join(str(text).split())
    return "“" + (flat if len(flat) <= limit else flat[: limit - 1] + "…") + "”"


def _changed(change: Change) -> str:
    if not change.commits:
        return "no commit"
    shown = "; ".join(change.commits[:3]) + (" …" if len(change.commits) > 3 else "")
    return f"changed: {shown}"


def _left_out(change: Change) -> str:
    """#21 p2: files the agent left that were not committed, for the operator's OK."""
    if not change.left_out:
        return ""
    return (
        " Not committed (outside the task's paths, or named like a secret): "
        + ", ".join(change.left_out[:20])
        + " — commit them by hand if they belong in the change."
    )


def _mr_state(change: Change, case: str) -> str:
    if change.mr is None:
        return "no MR"
    if change.mr.get("ready"):
        return "ready for review (acceptance passed on its head)"
    record = change.record
    if record is not None and record.checks_changed and not record.checks_approved:
        return (
            "kept a draft: the change edits what the required checks run ("
            + ", ".join(record.checks_changed)
            + f") — `admin: accept-checks {case}` if that is what you want"
        )
    reason = record.reason if record is not None and record.reason else "not accepted on its head"
    return f"kept a draft: {reason}"


def _url(work: Work, change: Change | None = None) -> str:
    if change is not None and change.mr:
        return str(change.mr.get("web_url") or "")

    entry = files.monitored_mrs().read().mrs.get(str(work.args.get("mr") or ""))
    return entry.web_url if entry is not None and entry.web_url else str(work.args.get("mr", ""))


def _result(change: Change, message: str, **extra: Any) -> dict[str, Any]:
    message += _left_out(change)
    data: dict[str, Any] = {
        "mode": change.mode,
        "changed": change.changed,
        "pushed": change.pushed,
        "pushed_sha": change.pushed_sha,
        "acceptance_passed": bool(change.record and change.record.passed),
        "commits": change.commits,
        "left_out": change.left_out,
        "message": message,
        **extra,
    }
    if change.mr is not None:
        data["mr"] = change.mr
    return data


def plan_waiting(case_id: str, plan: str) -> str:
    return (
        f"{case_id}: the plan for the change is ready; reply `admin: task {case_id}` to let me "
        f"implement it:\n{plan}"
    )


def task_result(work: Work, change: Change) -> dict[str, Any]:
    case = work.case.id
    if change.mr is not None:
        verb = "updated" if change.mr.get("adopted") else "opened"
        text = (
            f"{case}: MR {verb} {change.mr['web_url']} — {_changed(change)}; "
            f"{_mr_state(change, case)}"
        )
        return _result(change, text)
    if not change.changed:
        why = "the dev-agent changed nothing, so nothing was pushed and no MR was opened"
    else:
        why = "the change could not be pushed (the push trail is in the DM above)"
    said = f" It concluded: {quote(change.summary())}." if change.summary() else ""
    text = f"{case}: {why}.{said} {way_out(case)}."
    return _result(change, text, state="failed")


def fix_result(work: Work, change: Change, failure: str) -> dict[str, Any]:
    case, url = work.case.id, _url(work, change)
    pipeline = work.args.get("pipeline_id")
    red = f"pipeline #{pipeline} failed" if pipeline else "CI failed"
    red += f" ({quote(failure)})" if failure else ""
    if change.pushed:
        text = (
            f"{case}: CI fix pushed to {url} — {red}; {_changed(change)}; {_mr_state(change, case)}"
        )
        return _result(change, text)
    if not change.changed:
        said = f"; it concluded {quote(change.summary())}" if change.summary() else ""
        text = (
            f"{case}: {url} — {red}. The agent changed nothing{said}, so nothing was pushed: "
            "mr-monitor counts it as a failed attempt and tries again or escalates."
        )
    else:
        text = f"{case}: {url} — {red}; the fix could not be pushed (see the push DM)."
    return _result(change, text, state="not fixed")


def recover_result(
    work: Work,
    pushed: PushOutcome,
    target: str,
    status: str,
    submitted: dict[str, Any] | None,
) -> dict[str, Any]:
    case, url = work.case.id, _url(work)
    if pushed.pushed:
        ready = (
            "ready (acceptance passed on the new head)"
            if submitted and submitted.get("ready")
            else "kept a draft until the checks pass on the new head"
        )
        text = (
            f"{case}: {url} was `{status}` against {target}; {pushed.layer} brought it onto "
            f"origin/{target} and pushed {str(pushed.pushed_sha)[:8]}; {ready}."
        )
        state = "recovered"
    else:
        text = (
            f"{case}: {url} is `{status}` against {target} and L1/L2 could not resolve it; "
            "the whole trail is in the DM above."
        )
        state = "escalated"
    data: dict[str, Any] = {
        "mode": "fix_ci",
        "state": state,
        "pushed": pushed.pushed,
        "pushed_sha": pushed.pushed_sha or "",
        "layer": pushed.layer,
        "message": text,
    }
    if submitted is not None:
        data["mr"] = submitted
    return data


def review_result(
    work: Work,
    change: Change,
    evidence: WireEvidence,
    threads: list[Discussion],
    answered: list[str],
    skipped: dict[str, str],
    *,
    me: str,
) -> dict[str, Any]:
    case, url = work.case.id, _url(work, change)
    asked = _asked(threads, me)
    if answered and not skipped:
        text = (
            f"{case}: answered {_who(threads, me)} on {url} in {len(answered)} discussion(s) — "
            f"{_changed(change)}; {_mr_state(change, case)}"
        )
        return _result(change, text, answered=answered)
    concluded = change.summary() or "(it gave no answer)"
    why = (
        "it changed nothing (no commit)"
        if not change.changed
        else evidence.why_not() or "; ".join(sorted(set(skipped.values())))
    )
    head = (
        f"{case}: {asked} on {url}. The agent concluded {quote(concluded)}, but {why} — so "
        f"{'those discussions got' if answered else 'the reviewer got'} no reply"
    )
    tail = (
        f"; answered {len(answered)} other(s), {_changed(change)}."
        if answered
        else ". Reply yourself, or `admin: mr rescan "
        f"{work.args.get('mr', '')}` for another attempt."
    )
    return _result(change, head + tail, state="not answered", answered=answered, skipped=skipped)


def _who(threads: list[Discussion], me: str) -> str:
    names = sorted({n.author for d in threads for n in d.notes if is_reviewer_note(n, me=me)})
    return " and ".join(names) or "the reviewer"


def _asked(threads: list[Discussion], me: str) -> str:
    notes = [n for d in threads for n in d.notes if is_reviewer_note(n, me=me)]
    if not notes:
        return "the reviewer asked"
    newest = max(notes, key=lambda n: n.id)
    who = sorted({n.author for n in notes})
    return f"{', '.join(who)} asked {quote(newest.body)}"


def way_out(case_id: str) -> str:
    """#34 item 2: the case's true status, read back after the run, and the one command that
    moves it from Slack — before, "the case is `failed`" was said of a case the run had left
    ``approved`` (it failed before it began), where the commands it named both refused."""
    try:
        status = registry.load_case(case_id).status
    except HarnessError:
        return f"`admin: retry {case_id}` runs the dev-agent again once the case file is fixed"
    if status == "mr_open":
        return "The case is `mr_open`: the monitor watches its MR"
    return f"The case is `{status}`: `admin: retry {case_id}` runs the dev-agent again"
