"""`harness ingest-pagerduty` and `harness poll-pagerduty` end to end: the PagerDuty emulator in,
the Slack emulator out (through the real slack_sdk), a real case in a real workspace repo."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.sandbox.httpbase import Fault
from harness_cli.sandbox.pagerduty_api import SANDBOX_TOKEN, PagerDutyEmulator
from harness_cli.sandbox.slack_api import OPERATOR, SlackEmulator

EXIT_LINE = "exit=complete       confidence=89%  iterations=12  elapsed=13min"
Cli = Callable[..., tuple[int, str, str]]
"""The ``cli`` fixture of conftest: ``cli(*args) -> (exit code, stdout, stderr)``."""
ANALYSIS = "# Analysis\n\nRoot cause: the bulk discount rounds before summing.\n\nMore detail.\n"


@pytest.fixture(scope="module")
def slack_server() -> Iterator[SlackEmulator]:
    emulator = SlackEmulator()
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture(scope="module")
def pd_server() -> Iterator[PagerDutyEmulator]:
    emulator = PagerDutyEmulator()
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture
def slack(slack_server: SlackEmulator, monkeypatch: pytest.MonkeyPatch) -> SlackEmulator:
    monkeypatch.setenv("SLACK_API_URL", slack_server.url + "/api/")
    monkeypatch.setenv("SLACK_USER_TOKEN", "xoxp-0000000000-pagerduty-test")
    return slack_server


@pytest.fixture
def pd(pd_server: PagerDutyEmulator, monkeypatch: pytest.MonkeyPatch) -> PagerDutyEmulator:
    pd_server.reset()
    monkeypatch.setenv("PAGERDUTY_API_URL", pd_server.url)
    monkeypatch.setenv("PAGERDUTY_TOKEN", SANDBOX_TOKEN)
    return pd_server


@pytest.fixture
def case_dir(cli: Cli, config_dir: Path) -> Path:
    """Case AAA-7 with an exit line and an ANALYSIS.md, as an investigation leaves it."""
    from harness_cli.config import load_config
    from harness_cli.workspace import registry

    assert cli("init")[0] == 0
    code, out, err = cli(
        "case", "new", "--project", "team-a", "--title", "Totals off", "--id", "AAA-7", "--json"
    )
    assert code == 0, err
    with registry.update_case("AAA-7", load_config().harness.thresholds, "test") as case:
        case.exit = EXIT_LINE
    folder = Path(json.loads(out)["data"]["case_dir"])
    (folder / "ANALYSIS.md").write_text(ANALYSIS)
    return folder


def new_messages(slack: SlackEmulator, before: int) -> list[dict[str, Any]]:
    return slack.messages("D0SELF")[before:]


def webhook_file(pd: PagerDutyEmulator, tmp_path: Path, title: str, **kw: Any) -> Path:
    incident = pd.add_incident(title, **kw)
    path = tmp_path / f"webhook-{incident['id']}.json"
    path.write_text(json.dumps(pd.webhook(incident["id"])))
    return path


def case_threads() -> list[Any]:
    from harness_cli.state import files

    return files.oncall_thread_map().read().for_case("AAA-7")


def test_webhook_naming_the_case_posts_its_context_once(
    cli: Cli,
    case_dir: Path,
    slack: SlackEmulator,
    pd: PagerDutyEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PAGERDUTY_TOKEN")  # a webhook needs no REST key
    before = len(slack.messages("D0SELF"))
    payload = webhook_file(pd, tmp_path, "Checkout 500s, see AAA-7")
    code, out, err = cli("ingest-pagerduty", str(payload), "--json")
    assert code == 0, err
    data = json.loads(out)["data"]
    assert [s["case_id"] for s in data["surfaced"]] == ["AAA-7"]
    posted = new_messages(slack, before)
    assert len(posted) == 1
    text = posted[0]["text"]
    assert "Checkout 500s, see AAA-7" in text and "/incidents/P000001|" in text
    assert "status: *new*" in text and EXIT_LINE in text
    assert "Root cause: the bulk discount rounds before summing." in text
    assert posted[0]["user"] == OPERATOR
    # No case thread existed: the message starts one, registered for the case.
    threads = case_threads()
    assert [(t.channel, t.thread_ts, t.role) for t in threads] == [
        ("D0SELF", posted[0]["ts"], "case_thread")
    ]

    code, out, _ = cli("ingest-pagerduty", str(payload), "--json")
    assert code == 0
    assert json.loads(out)["data"]["surfaced"] == []
    assert json.loads(out)["skipped"] == ["incident #1 (P000001): already surfaced in AAA-7"]
    assert new_messages(slack, before) == posted


def test_stdin_webhook_replies_in_the_existing_case_thread(
    cli: Cli,
    case_dir: Path,
    slack: SlackEmulator,
    pd: PagerDutyEmulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harness_cli.workspace import registry

    parent = slack.post_as("D0SELF", OPERATOR, "AAA-7 case thread")["ts"]
    registry.register_thread(
        registry.load_case("AAA-7"), channel="D0SELF", thread_ts=parent, role="case_thread"
    )
    incident = pd.add_incident("Pricing alarms", description="Looks like AAA-7 again")
    # A list of envelopes: the same incident triggered then acknowledged posts once.
    payload = [pd.webhook(incident["id"]), pd.webhook(incident["id"], "incident.acknowledged")]
    before = len(slack.messages("D0SELF"))
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(payload)))
    code, out, err = cli("ingest-pagerduty", "-", "--json")
    assert code == 0, err
    posted = new_messages(slack, before)
    assert len(posted) == 1 and posted[0]["thread_ts"] == parent
    assert len(json.loads(out)["skipped"]) == 1
    # v3 incident data has no description: the key was found through GET /incidents/{id}.
    assert [r.path for r in pd.recorded("/incidents/")] == [f"/incidents/{incident['id']}"]
    assert len(case_threads()) == 1  # no second case thread was started


def test_incident_naming_nothing_known_is_logged_not_posted(
    cli: Cli,
    case_dir: Path,
    slack: SlackEmulator,
    pd: PagerDutyEmulator,
    tmp_path: Path,
) -> None:
    before = len(slack.messages("D0SELF"))
    # BBB is a configured prefix without a case; ZZZ is no prefix at all; AAA-70 is not AAA-7.
    payload = webhook_file(pd, tmp_path, "Queue lag: BBB-999, ZZZ-7, AAA-70")
    code, out, err = cli("ingest-pagerduty", str(payload), "--json")
    assert code == 0, err
    assert json.loads(out)["data"]["unmatched"] == ["#1 (P000001)"]
    assert new_messages(slack, before) == []
    log = (tmp_path / "harness-home" / "logs" / "agent.log").read_text()
    lines = [json.loads(line) for line in log.splitlines()]
    unmatched = [e for e in lines if e["event"] == "pagerduty_unmatched"]
    assert len(unmatched) == 1 and unmatched[0]["incident_id"] == "P000001"


def test_poll_twice_posts_only_once(
    cli: Cli,
    case_dir: Path,
    slack: SlackEmulator,
    pd: PagerDutyEmulator,
    tmp_path: Path,
) -> None:
    pd.add_incident("Nightly batch failed")
    pd.add_incident("Checkout totals wrong again — AAA-7")
    pd.add_incident("Disk full on pricing-db", details={"runbook": "see case AAA-7"})
    before = len(slack.messages("D0SELF"))
    code, out, err = cli("poll-pagerduty", "--json")
    assert code == 0, err
    first = json.loads(out)["data"]
    assert [s["incident_id"] for s in first["surfaced"]] == ["P000002", "P000003"]
    assert first["unmatched"] == ["#1 (P000001)"]
    assert len(new_messages(slack, before)) == 2
    # body.details only comes with the single view: fetched for incidents naming nothing else.
    singles = sorted(r.path for r in pd.recorded("/incidents/"))
    assert singles == ["/incidents/P000001", "/incidents/P000003"]

    code, out, err = cli("poll-pagerduty", "--json")
    assert code == 0, err
    second = json.loads(out)
    assert second["data"]["surfaced"] == [] and second["data"]["unmatched"] == []
    assert len(second["skipped"]) == 3
    assert second["data"]["since"] == first["cursor"]  # the cursor moved to the newest
    assert len(new_messages(slack, before)) == 2
    state = json.loads((tmp_path / "harness-home" / "pagerduty-state.json").read_text())
    assert state["incidents"]["P000002"]["case_id"] == "AAA-7"
    assert state["incidents"]["P000001"]["case_id"] is None


def test_poll_rides_out_a_429(
    cli: Cli,
    case_dir: Path,
    slack: SlackEmulator,
    pd: PagerDutyEmulator,
) -> None:
    pd.add_incident("AAA-7: latency page")
    pd.add_fault(Fault("status", match="/incidents", status=429, headers={"ratelimit-reset": "0"}))
    before = len(slack.messages("D0SELF"))
    code, _, err = cli("poll-pagerduty")
    assert code == 0, err
    assert [r.status for r in pd.recorded("/incidents")] == [429, 200]
    assert len(new_messages(slack, before)) == 1


def test_malformed_webhook_is_bad_input_in_one_line(
    cli: Cli,
    config_dir: Path,
    slack: SlackEmulator,
    tmp_path: Path,
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"event": {"id": "E1",')
    code, out, err = cli("ingest-pagerduty", str(broken))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "not valid JSON" in err and "Traceback" not in err
    no_event = tmp_path / "no-event.json"
    no_event.write_text('{"messages": []}')
    code, _, err = cli("ingest-pagerduty", str(no_event))
    assert code == 2 and "no 'event' object" in err
    code, _, err = cli("ingest-pagerduty", str(tmp_path / "missing.json"))
    assert code == 2 and "cannot read" in err


def test_missing_token_says_how_to_fix_it(
    cli: Cli,
    config_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PAGERDUTY_TOKEN", raising=False)
    code, _, err = cli("poll-pagerduty")
    assert code == 2
    assert "PAGERDUTY_TOKEN is not set" in err and "API Access Keys" in err


def test_self_dm_outside_the_allowlist_is_refused(
    cli: Cli,
    case_dir: Path,
    config_dir: Path,
    slack: SlackEmulator,
    pd: PagerDutyEmulator,
    tmp_path: Path,
) -> None:
    harness_yaml = config_dir / "harness.yaml"
    original = harness_yaml.read_text()
    harness_yaml.write_text(
        original.replace("outbound_allowlist: [D0SELF]", "outbound_allowlist: [C0OTHER]")
    )
    payload = webhook_file(pd, tmp_path, "AAA-7 paging again")
    before = len(slack.messages("D0SELF"))
    code, _, err = cli("ingest-pagerduty", str(payload))
    assert code == 4 and "not in outbound_allowlist" in err
    assert new_messages(slack, before) == []
    # Nothing was recorded as surfaced: once the allowlist is fixed, the page gets through.
    harness_yaml.write_text(original)
    assert cli("ingest-pagerduty", str(payload))[0] == 0
    assert len(new_messages(slack, before)) == 1


def test_match_case_rules() -> None:
    from harness_cli.intake.pagerduty.workflow import Incident, match_case

    cases: list[dict[str, Any]] = [
        {"id": "slack-C0SUPPORT-1700000000-000100", "jira": "BBB-12"},
        {"id": "AAA-7", "jira": "AAA-7"},
    ]

    def match(title: str, details: str = "") -> str | None:
        return match_case(Incident(id="P1", title=title, details=details), cases, ["AAA", "BBB"])

    assert match("pricing: BBB-12 regressed") == "slack-C0SUPPORT-1700000000-000100"
    assert match("see slack-C0SUPPORT-1700000000-000100 and AAA-7") == (
        "slack-C0SUPPORT-1700000000-000100"
    )  # the first one named wins
    assert match("nothing here", details='{"ticket": "AAA-7"}') == "AAA-7"
    assert match("AAA-70 and XAAA-7 and AAA-7000") is None
    assert match("XX-7 is another team's prefix, UTF-8 is no key") is None


def test_parse_webhook_shapes_and_errors() -> None:
    from harness_cli.errors import InputError
    from harness_cli.intake.pagerduty.workflow import parse_webhook

    note = {
        "event": {
            "id": "E2",
            "event_type": "incident.annotated",
            "resource_type": "incident",
            "occurred_at": "2026-11-29T10:00:00Z",
            "data": {
                "type": "incident_note",
                "id": "N1",
                "content": "Related to AAA-7",
                "incident": {"id": "P9", "summary": "Checkout down", "html_url": "https://x/P9"},
            },
        }
    }
    service = {
        "event": {
            "id": "E3",
            "event_type": "service.updated",
            "resource_type": "service",
            "data": {"id": "S1", "type": "service"},
        }
    }
    [inc] = parse_webhook([note, service])
    assert (inc.id, inc.title, inc.details, inc.event_key) == (
        "P9",
        "Checkout down",
        "Related to AAA-7",
        "event:E2",
    )
    bad = {"event": {"id": "E4", "event_type": "incident.triggered", "data": {"title": "x"}}}
    with pytest.raises(InputError, match=r"payload\[1\]: event.data id"):
        parse_webhook([note, bad], source="payload")
    with pytest.raises(InputError, match=r"event\.event_type is missing"):
        parse_webhook({"event": {"id": "E5", "data": {}}})
