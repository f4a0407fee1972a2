"""L0: one redaction filter keeps tokens out of logs, error lines and crash files."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from harness_cli.logs import REDACTED, JsonLines, RedactFilter, redact

SECRETS = [
    "xoxp-1234567890-1234567890123-abcdefABCDEF1234",
    "xoxb-2222222222-3333333333333-ZZZZzzzzYYYYyyyy",
    "xapp-1-A0123456789-1234567890123-abcdef0123456789",
    "glpat-Ab3dEf6hIj9kLm2nOp5q",
    "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcdEFGH",
]


@pytest.mark.parametrize("secret", SECRETS)
def test_token_shapes_are_redacted(secret: str) -> None:
    text = f"calling with token={secret} failed"
    out = redact(text)
    assert secret not in out
    assert REDACTED in out
    assert out.startswith("calling with token=")


def test_bearer_header_and_url_credentials() -> None:
    out = redact(
        "Authorization: Bearer abcdefghijklmnop1234 to "
        "https://oauth2:supersecretvalue@gitlab.example.com/g/p.git"
    )
    assert "abcdefghijklmnop1234" not in out
    assert "supersecretvalue" not in out
    assert "oauth2:" in out and "gitlab.example.com/g/p.git" in out


def test_values_of_secret_variables_are_redacted_whatever_their_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITLAB_TOKEN", "plain-looking-value-42")
    assert "plain-looking-value-42" not in redact("token plain-looking-value-42 rejected")


def test_ordinary_text_is_untouched() -> None:
    text = "case AAA-123 moved to awaiting_approval; sha 0123abcd; skip-ci"
    assert redact(text) == text


def test_log_records_are_redacted_in_message_and_fields() -> None:
    record = logging.LogRecord(
        "harness.x", logging.ERROR, __file__, 1, "push failed with %s", (SECRETS[3],), None
    )
    record.fields = {"url": f"https://x:{SECRETS[3]}@h/p.git", "n": 3}
    RedactFilter().filter(record)
    line = JsonLines().format(record)
    assert SECRETS[3] not in line
    entry = json.loads(line)
    assert entry["level"] == "error" and entry["n"] == 3 and "ts" in entry


def test_secrets_known_only_from_the_env_file_are_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$HARNESS_HOME/env is what cron and systemd load: its secrets are known even in a
    process that did not load it (a shell, a test)."""
    monkeypatch.setenv("HARNESS_HOME", str(tmp_path))
    (tmp_path / "env").write_text(
        "# tokens\nexport JIRA_API_TOKEN='plain-jira-value-123'\nGITLAB_URL=https://gitlab.example.com\n"
    )
    out = redact("jira said plain-jira-value-123 at https://gitlab.example.com/x")
    assert "plain-jira-value-123" not in out
    assert "https://gitlab.example.com/x" in out  # not a secret by its name


def test_private_key_blocks_and_other_token_shapes() -> None:
    key = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
        "-----END OPENSSH PRIVATE KEY-----"
    )
    for secret in (key, "ghp_" + "a" * 36, "AKIAABCDEFGHIJKLMNOP"):
        out = redact(f"found {secret} here")
        assert secret not in out and out.startswith("found ") and out.endswith(" here")


def test_redaction_keeps_json_valid_and_binary_untouched() -> None:
    from harness_cli.redaction import redact_bytes

    text = json.dumps({"url": "https://u:pw-secret-1@h/p.git", "k": SECRETS[0], "n": 1})
    data = json.loads(redact(text))
    assert data["url"] == "https://u:[REDACTED]@h/p.git" and data["k"] == REDACTED
    blob = b"\x89PNG\r\n\x1a\n" + SECRETS[0].encode() + b"\xff"
    assert redact_bytes(blob) == blob


def test_prose_about_credentials_is_not_mangled() -> None:
    text = "Bearer authentication fails since Tuesday; the private token page says expired"
    assert redact(text) == text


def test_every_env_file_value_is_a_secret_by_value_whatever_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#28 R3: names that end in none of _TOKEN/_SECRET/_API_KEY/_PASSWORD, in the file named by
    HARNESS_ENV_FILE as well as $HARNESS_HOME/env; only the documented settings stay readable."""
    from harness_cli.redaction import encoded_forms, without_secrets

    monkeypatch.setenv("HARNESS_HOME", str(tmp_path))
    (tmp_path / "env").write_text("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI-K7MDENG\n")
    other = tmp_path / "cron.env"
    other.write_text(
        "DD_APP_KEY='8c1f0f5e2d7b4a9e6f3c'\nWEBHOOK=https://hooks.example/x/y9z\n"
        "GITLAB_URL=https://gitlab.example.com\nHARNESS_WORKSPACE=/srv/ws\n"
    )
    monkeypatch.setenv("HARNESS_ENV_FILE", str(other))
    text = (
        "aws wJalrXUtnFEMI-K7MDENG dd 8c1f0f5e2d7b4a9e6f3c hook https://hooks.example/x/y9z "
        "at https://gitlab.example.com/g in /srv/ws"
    )
    out = redact(text)
    for secret in ("wJalrXUtnFEMI-K7MDENG", "8c1f0f5e2d7b4a9e6f3c", "hooks.example/x/y9z"):
        assert secret not in out
    assert "https://gitlab.example.com/g" in out and "/srv/ws" in out
    # encoded as an agent would hide it: base64 at any alignment, hex, URL-encoding
    import base64
    import urllib.parse

    secret = "wJalrXUtnFEMI-K7MDENG"
    for prefix in ("", "a", "ab"):
        b64 = base64.b64encode((prefix + secret + "tail").encode()).decode()
        assert secret not in redact(b64) and any(f in b64 for f in encoded_forms(secret))
        assert redact(b64) != b64
    assert redact(secret.encode().hex()) == REDACTED
    assert "K7MDENG" not in redact(urllib.parse.quote("x" + secret + "/y", safe=""))
    # and no variable holding one reaches code the harness does not trust
    env = {"PATH": "/usr/bin", "MY_VAR": "wJalrXUtnFEMI-K7MDENG", "OTHER": "x"}
    assert without_secrets(env) == {"PATH": "/usr/bin", "OTHER": "x"}


def test_process_variables_named_like_credentials_anywhere_in_the_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("AWS_SECRET_ACCESS_KEY", "DD_APP_KEY", "STRIPE_KEY", "DB_PASSWORD_FILE_VALUE"):
        monkeypatch.setenv(name, f"value-of-{name.lower()}-123")
        assert f"value-of-{name.lower()}-123" not in redact(f"x value-of-{name.lower()}-123 y")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Alice Example")
    assert redact("by Alice Example") == "by Alice Example"
