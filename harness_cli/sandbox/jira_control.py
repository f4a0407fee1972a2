"""The Jira emulator's control API (``POST <JIRA_URL>/_control/<action>``), for tests, the
sandbox's scenarios and an operator poking at ``harness sandbox``.

- ``seed {projects?, users?, issues}``: scenario data (``issues``: ``[{key, summary, description,
  status, assignee, reporter, labels, created, updated, comments, links}]``).
- ``add_issue``, ``add_comment {key, body, author?, properties?}``, ``add_link {key, type,
  direction, other}``, ``add_user {name, display_name?, email?}``, ``set_status {key, status}``.
- ``add_token {token, user}``, ``revoke_token {token}`` (its holder then gets 401: an expired
  token), ``set_deployment {deployment: Cloud|Server}``, ``set_lag {seconds}`` (JQL sees a write
  that much later), ``reset``.
- ``fault {kind, status, match, method, where, seconds, times, headers, body}``,
  ``clear_faults``, ``state``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness_cli.sandbox.httpbase import Emulator
from harness_cli.sandbox.jira_errors import JiraFault
from harness_cli.sandbox.jira_render import comment_json
from harness_cli.sandbox.jira_state import DEPLOYMENTS

if TYPE_CHECKING:
    from harness_cli.sandbox.jira_api import JiraEmulator

__all__ = ["ACTIONS", "control"]

ACTIONS = (
    "seed",
    "add_issue",
    "add_comment",
    "add_link",
    "add_user",
    "set_status",
    "add_token",
    "revoke_token",
    "set_deployment",
    "set_lag",
    "reset",
)


def control(emu: JiraEmulator, action: str, body: dict[str, Any]) -> Any:
    if action == "fault":
        emu.add_fault(JiraFault(**body))
        return {"ok": True}
    if action == "seed":
        return seed(emu, body)
    if action == "add_issue":
        return emu.add_issue(**body)
    if action == "add_comment":
        key = body["key"]
        comment = emu.add_comment(**body)
        return comment_json(emu, emu.issue(key), comment, "2", {"properties"})
    if action == "add_link":
        emu.add_link(body["key"], body["type"], body.get("direction", "outward"), body["other"])
        return {"ok": True}
    if action == "add_user":
        return emu.add_user(**body)
    if action == "set_status":
        emu.set_status(body["key"], body["status"])
        return {"ok": True}
    if action == "add_token":
        with emu.state_lock:
            if body["user"] not in emu.users:
                emu.add_user(body["user"])
            emu.tokens[body["token"]] = body["user"]
        return {"ok": True}
    if action == "revoke_token":
        with emu.state_lock:
            emu.tokens.pop(body["token"], None)
        return {"ok": True}
    if action == "set_deployment":
        if body.get("deployment") not in DEPLOYMENTS:
            raise ValueError(f"deployment must be one of {DEPLOYMENTS}")
        emu.deployment = body["deployment"]
        return {"ok": True}
    if action == "set_lag":
        emu.lag = float(body.get("seconds", 0))
        return {"ok": True}
    if action == "reset":
        emu.reset()
        return {"ok": True}
    return Emulator.control(emu, action, body)


def seed(emu: JiraEmulator, body: dict[str, Any]) -> dict[str, Any]:
    """Scenario data in one call; links may point at issues seeded later in the same list."""
    for user in body.get("users", []):
        emu.add_user(**user)
    for project in body.get("projects", []):
        emu.add_project(**project)
    pending: list[tuple[str, dict[str, Any]]] = []
    keys = []
    for raw in body.get("issues", []):
        issue = dict(raw)
        pending += [(issue["key"], link) for link in issue.pop("links", [])]
        keys.append(emu.add_issue(**issue)["key"])
    for key, link in pending:
        if not any(lid for lid, _, _, other in emu.issue(key).links if other == link["key"]):
            emu.add_link(key, link["type"], link.get("direction", "outward"), link["key"])
    return {"issues": keys}
