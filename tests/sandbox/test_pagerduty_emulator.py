"""The PagerDuty emulator over real HTTP (urllib), and the harness's REST client against it."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from harness_cli.errors import ConfigError, ServiceError
from harness_cli.intake.pagerduty.rest import PagerDutyClient, PagerDutySettings
from harness_cli.sandbox.httpbase import Fault
from harness_cli.sandbox.pagerduty_api import SANDBOX_TOKEN, PagerDutyEmulator

ACCEPT = "application/vnd.pagerduty+json;version=2"


@pytest.fixture(scope="module")
def server() -> Iterator[PagerDutyEmulator]:
    emulator = PagerDutyEmulator()
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture
def emu(server: PagerDutyEmulator) -> PagerDutyEmulator:
    server.reset()
    return server


def call(
    emu: PagerDutyEmulator,
    path: str,
    params: list[tuple[str, str]] | None = None,
    *,
    auth: str | None = f"Token token={SANDBOX_TOKEN}",
    method: str = "GET",
    body: dict[str, Any] | None = None,
) -> tuple[int, dict[str, str], Any]:
    url = emu.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
    headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
    if auth:
        headers["Authorization"] = auth
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, json.load(resp)
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, json.loads(exc.read())


def client(emu: PagerDutyEmulator, sleeps: list[float] | None = None) -> PagerDutyClient:
    settings = PagerDutySettings(base_url=emu.url, token=SANDBOX_TOKEN, timeout=10)
    return PagerDutyClient(
        settings, sleep=(sleeps.append if sleeps is not None else lambda _: None)
    )


def test_auth_is_token_header_and_errors_have_pagerduty_shape(emu: PagerDutyEmulator) -> None:
    for auth in (None, "Token token=wrong", f"Bearer-ish {SANDBOX_TOKEN}"):
        status, _, body = call(emu, "/incidents", auth=auth)
        assert status == 401
        assert body == {"error": {"message": "Authentication failed", "code": 2006}}
    assert call(emu, "/incidents")[0] == 200
    assert call(emu, "/incidents", auth=f"Bearer {SANDBOX_TOKEN}")[0] == 200


def test_list_pages_with_limit_offset_more_and_total(emu: PagerDutyEmulator) -> None:
    ids = [emu.add_incident(f"incident {n}")["id"] for n in range(7)]
    seen: list[str] = []
    offset, mores = 0, []
    while True:
        status, headers, page = call(emu, "/incidents", [("limit", "3"), ("offset", str(offset))])
        assert status == 200
        assert (page["limit"], page["offset"], page["total"]) == (3, offset, None)
        assert headers["ratelimit-limit"] == "960"
        seen += [i["id"] for i in page["incidents"]]
        mores.append(page["more"])
        if not page["more"]:
            break
        offset += 3
    assert seen == ids  # oldest first
    assert mores == [True, True, False]
    _, _, counted = call(emu, "/incidents", [("total", "true"), ("limit", "500")])
    assert (counted["total"], counted["limit"], counted["more"]) == (7, 100, False)
    status, _, body = call(emu, "/incidents", [("offset", "9950"), ("limit", "100")])
    assert status == 400 and body["error"]["code"] == 2001


def test_list_filters_statuses_and_date_range(emu: PagerDutyEmulator) -> None:
    old = emu.add_incident("last quarter", created_at="2020-01-01T00:00:00Z")["id"]
    live = emu.add_incident("live one")["id"]
    done = emu.add_incident("done one")["id"]
    emu.resolve(done)
    _, _, default = call(emu, "/incidents")
    assert [i["id"] for i in default["incidents"]] == [live, done]  # the last 30 days
    _, _, everything = call(emu, "/incidents", [("date_range", "all")])
    assert [i["id"] for i in everything["incidents"]] == [old, live, done]
    _, _, open_only = call(
        emu, "/incidents", [("statuses[]", "triggered"), ("statuses[]", "acknowledged")]
    )
    assert [i["id"] for i in open_only["incidents"]] == [live]
    window = [("since", "2019-12-31T00:00:00Z"), ("until", "2020-01-02T00:00:00Z")]
    assert [i["id"] for i in call(emu, "/incidents", window)[2]["incidents"]] == [old]
    status, _, body = call(emu, "/incidents", [("since", "yesterday")])
    assert status == 400 and body["error"]["code"] == 2004
    status, _, body = call(emu, "/incidents", [("since", "2021-01-01"), ("until", "2020-01-01")])
    assert status == 400 and body["error"]["code"] == 2005


def test_single_incident_view_has_body_details(emu: PagerDutyEmulator) -> None:
    created = emu.add_incident("Disk full", details={"ticket": "AAA-7"}, urgency="low")
    _, _, listed = call(emu, "/incidents")
    assert "body" not in listed["incidents"][0]
    status, _, single = call(emu, f"/incidents/{created['id']}")
    assert status == 200
    inc = single["incident"]
    assert inc["body"] == {"type": "incident_body", "details": {"ticket": "AAA-7"}}
    assert (inc["incident_number"], inc["urgency"], inc["status"]) == (1, "low", "triggered")
    assert inc["service"]["type"] == "service_reference" and inc["service"]["summary"]
    assert inc["html_url"].endswith(f"/incidents/{created['id']}")
    status, _, missing = call(emu, "/incidents/PNOPE00")
    assert status == 404 and missing["error"]["code"] == 2100


def test_injected_429_looks_like_pagerduty(emu: PagerDutyEmulator) -> None:
    emu.add_fault(Fault("status", match="/incidents", status=429))
    status, headers, body = call(emu, "/incidents")
    assert status == 429
    assert body == {"error": {"message": "Rate Limit Exceeded", "code": 2020}}
    assert headers["ratelimit-remaining"] == "0" and headers["ratelimit-reset"] == "1"
    assert "retry-after" not in headers
    assert call(emu, "/incidents")[0] == 200  # one fault, used up


def test_control_api_over_http_and_snapshot(emu: PagerDutyEmulator) -> None:
    added = call(emu, "/_control/add_incident", method="POST", body={"title": "Paged: AAA-7"})[2]
    resolved = call(emu, "/_control/resolve", method="POST", body={"id": added["id"]})[2]
    assert resolved["status"] == "resolved"
    hook = call(emu, "/_control/webhook", method="POST", body={"id": added["id"]})[2]
    ev = hook["event"]
    assert (ev["event_type"], ev["resource_type"]) == ("incident.triggered", "incident")
    assert ev["occurred_at"].endswith("Z") and ev["id"]
    assert ev["data"]["type"] == "incident" and ev["data"]["number"] == added["incident_number"]
    assert "incident_number" not in ev["data"]
    again = call(emu, "/_control/webhook", method="POST", body={"id": added["id"]})[2]
    assert again["event"]["id"] != ev["id"]  # every event has its own id
    state = call(emu, "/_control/state", method="POST", body={})[2]
    assert [i["status"] for i in state["incidents"]] == ["resolved"]
    assert state["requests"] == 0  # control calls are not recorded


def test_client_walks_every_page_with_the_documented_headers(emu: PagerDutyEmulator) -> None:
    for n in range(130):
        emu.add_incident(f"storm {n}")
    got = list(client(emu).incidents(since=emu.now() - timedelta(hours=1)))
    assert len(got) == 130
    pages = emu.recorded("/incidents")
    assert [r.query["offset"] for r in pages] == [["0"], ["100"]]
    assert pages[0].headers["authorization"] == f"Token token={SANDBOX_TOKEN}"
    assert pages[0].headers["accept"] == ACCEPT


def test_client_waits_ratelimit_reset_then_retries(emu: PagerDutyEmulator) -> None:
    emu.add_incident("after the storm")
    emu.add_fault(Fault("status", match="/incidents", status=429, headers={"ratelimit-reset": "7"}))
    sleeps: list[float] = []
    got = list(client(emu, sleeps).incidents(since=emu.now() - timedelta(hours=1)))
    assert [i["title"] for i in got] == ["after the storm"]
    assert sleeps == [7.0]
    assert [r.status for r in emu.recorded("/incidents")] == [429, 200]


def test_client_gives_up_on_long_waits_and_persistent_errors(emu: PagerDutyEmulator) -> None:
    emu.add_fault(
        Fault("status", match="/incidents", status=429, headers={"ratelimit-reset": "600"})
    )
    with pytest.raises(ServiceError, match="retry after 600"):
        list(client(emu).incidents(since=emu.now()))
    emu.add_fault(Fault("status", match="/incidents", status=500, times=-1))
    sleeps: list[float] = []
    with pytest.raises(ServiceError, match="HTTP 500"):
        list(client(emu, sleeps).incidents(since=emu.now()))
    assert sleeps == [0.5, 1.0]  # three attempts, backoff without headers
    emu.faults.clear()
    bad = PagerDutyClient(PagerDutySettings(base_url=emu.url, token="nope"))
    with pytest.raises(ConfigError, match="PAGERDUTY_TOKEN"):
        list(bad.incidents(since=emu.now()))
