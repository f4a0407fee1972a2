"""#34 item 11: the operator's channel is read first and on its own — a 500 on #support does
not leave `admin: oncall resume` unread for the cycle. (These pin the order; they pass on the
main of #34's time as well: the failure reported could not be reproduced this way.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.mark.parametrize("times", [1, 3, -1])
def test_a_500_on_support_does_not_delay_oncall_resume(
    cli: Any, slack_emu: Any, harness_ready: Path, times: int
) -> None:
    assert cli("pause")[0] == 0
    slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: oncall resume")
    slack_emu.fail("conversations.history", "internal_error", channel="C0SUPPORT",
                   times=times, status=500)  # fmt: skip
    _, out, err = cli("poll-slack", "--json")
    assert "resumed" in " ".join(m["text"] for m in slack_emu.messages("D0SELF")), out + err
    from harness_cli.intake import pause

    assert not pause.view().paused


@pytest.mark.parametrize("kind", ["html", "drop", "hang"])
def test_support_failing_like_a_proxy_does_not_delay_the_self_dm(
    cli: Any, slack_emu: Any, harness_ready: Path, kind: str
) -> None:
    """A 500 with an HTML body from a proxy, a dropped connection, a hung read on #support."""
    from harness_cli.sandbox.httpbase import Fault

    assert cli("pause")[0] == 0
    slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: oncall resume")
    where = {"channel": "C0SUPPORT"}
    fault = {
        "html": Fault(kind="status", match="conversations.history", status=500,
                      body="<html>502 Bad Gateway</html>", where=where),
        "drop": Fault(kind="drop", match="conversations.history", where=where),
        "hang": Fault(kind="hang", match="conversations.history", where=where, seconds=3),
    }[kind]  # fmt: skip
    slack_emu.add_fault(fault)
    _, out, err = cli("poll-slack", "--json")
    texts = " ".join(m["text"] for m in slack_emu.messages("D0SELF"))
    assert "resumed" in texts, out + err
