"""#28 R5: the secret scan reads what is really pushed, and the MR text like a push.

On main the scan read ``git diff -U0`` without ``--text``: a binary file, a file marked
``-diff`` in .gitattributes (a plain AWS key went out this way), commit messages and the
harness's own token hex- or base64-encoded or split over two literals all left with the push.
End to end on the sandbox (GitLab with real git, the harness's own loop, the scripted
``dev_push_leaks`` agent): the push is refused, each place named, nothing reaches the remote;
an MR description carrying the token split over two lines never reaches GitLab.
"""

from __future__ import annotations

import base64
import json
import re

import pytest

from harness_cli.sandbox.runner import SANDBOX_TOKENS
from harness_cli.services.git import Git
from tests.delivery.desk import Desk

pytestmark = pytest.mark.slow

TOKEN = SANDBOX_TOKENS["GITLAB_TOKEN"]
AWS_KEY = "AKIAZ7QW3RT5YU8IOP2A"


def _script(desk: Desk) -> None:
    half = len(TOKEN) // 2
    desk.box.anthropic.load_script(
        "dev_push_leaks",
        {
            "known_token": TOKEN,
            "token_a": TOKEN[:half],
            "token_b": TOKEN[half:],
            "token_hex": TOKEN.encode().hex(),
            "token_b64": base64.b64encode(TOKEN.encode()).decode(),
            "aws_key": AWS_KEY,
        },
    )


def test_secrets_in_binaries_undiffed_files_encodings_and_messages_never_leave(
    desk: Desk,
) -> None:
    _script(desk)
    desk.force_ci("success", times=3)
    desk.approved_case("PUSH-1")

    result = desk.task("PUSH-1", expect=None)

    assert result["data"]["pushed"] is False, result
    assert "refs/heads/harness/PUSH-1" not in Git(desk.bare()).run("for-each-ref")
    assert desk.box.gitlab.snapshot()["merge_requests"] == []
    [refused] = [p["text"] for p in desk.harness_posts() if "Push refused" in p["text"]]
    for where in (
        "assets/logo.png:3 (GITLAB_TOKEN's value)",  # a binary file, read whole
        "secrets.txt:1",  # marked -diff: its lines read as text all the same
        "docs/hex.txt:1 (GITLAB_TOKEN's value, encoded)",
        "pricing/config.py:2 (GITLAB_TOKEN's value, split)",
    ):
        assert where in refused, (where, refused)
    assert re.search(r"`commit [0-9a-f]{10}:\d+ \(GITLAB_TOKEN's value, encoded\)`", refused)
    everything = json.dumps(desk.box.slack.snapshot()) + json.dumps(desk.box.gitlab.snapshot())
    for shown in (TOKEN, AWS_KEY, TOKEN.encode().hex()):
        assert shown not in everything


def test_an_mr_description_with_the_token_split_over_two_lines_never_reaches_gitlab(
    desk: Desk,
) -> None:
    _script(desk)
    desk.force_ci("success", times=3)
    desk.approved_case("MRTXT-1")

    desk.task("MRTXT-1", expect=None)

    half = len(TOKEN) // 2
    for mr in desk.box.gitlab.snapshot()["merge_requests"]:
        text = mr["title"] + mr["description"]
        assert not (TOKEN[:half] in text and TOKEN[half:] in text), text
    sent_back = [
        r.body.decode("utf-8", "replace")
        for r in desk.box.anthropic.recorded()
        if b"was sent back" in r.body
    ]
    assert sent_back and "SECRET (description line 3)" in sent_back[0]
    assert "split" in sent_back[0] and TOKEN[half:] not in sent_back[0]
