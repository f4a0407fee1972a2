"""A Slack that cannot give a permalink (an error, or a method it lacks) still gets its ticket
opened: the link is a convenience, the case is not."""

from __future__ import annotations

import json
from pathlib import Path

from harness_cli.sandbox.httpbase import Fault
from tests.conftest import payloads


def test_ticket_opens_without_a_permalink(
    cli,
    slack_emu,
    harness_ready: Path,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    slack_emu.add_fault(
        Fault(
            kind="status",
            match="chat.getPermalink",
            status=200,
            times=-1,
            body={"ok": False, "error": "unknown_method"},
        )
    )
    msg = slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-8 the export is empty")
    code, out, err = cli("poll-slack", "--json")
    assert code == 0, err
    assert json.loads(out)["data"]["new_cases"] == ["AAA-8"]
    assert len(payloads(tmp_path, "investigate")) == 1
    message = json.loads((tmp_path / "workspace/case-workspaces/AAA-8/message.json").read_text())
    assert message["permalink"] == f"C0SUPPORT/{msg['ts']}"
