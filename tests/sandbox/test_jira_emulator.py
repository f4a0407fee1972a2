"""The Jira emulator driven through the harness's Jira client library (atlassian-python-api),
Cloud (email + API token) and Data Center (personal access token), every endpoint and fault."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from atlassian import Jira
from atlassian.jira import JiraCloud

from harness_cli.sandbox.jira_api import SANDBOX_PAT, SANDBOX_TOKEN, SANDBOX_USER, JiraEmulator

ISSUES: list[dict[str, Any]] = [
    {
        "key": "AAA-101",
        "summary": "Bulk discount not applied at exactly 10 units",
        "description": "An order of 10 x 5.00 is charged 50.00.\n\nThe README says 10 % off.",
        "reporter": "sam",
        "labels": ["pricing", "customer"],
        "priority": "High",
        "created": "2026-03-03T10:00:00Z",
        "comments": [
            {"author": "sam", "body": "Also seen on ORD-42", "created": "2026-03-03T11:00:00Z"}
        ],
        "links": [{"type": "Problem/Incident", "direction": "outward", "key": "AAA-87"}],
    },
    {
        "key": "AAA-87",
        "summary": "Refactor: name the bulk threshold",
        "status": "Done",
        "created": "2026-02-20T10:00:00Z",
        "assignee": "alex",
    },
] + [
    {"key": f"BBB-{n}", "summary": f"Paging filler {n}", "created": f"2026-01-{n:02d}T09:00:00Z"}
    for n in range(1, 8)
]


@pytest.fixture(scope="module")
def server() -> Iterator[JiraEmulator]:
    emulator = JiraEmulator(deployment="Cloud")
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture
def emu(server: JiraEmulator) -> JiraEmulator:
    server.reset()
    server.deployment = "Cloud"
    server.control("seed", {"issues": ISSUES})
    return server


def cloud(emu: JiraEmulator, token: str = SANDBOX_TOKEN, **kw: Any) -> Jira:
    return Jira(emu.url, username=SANDBOX_USER, password=token, cloud=True, timeout=5, **kw)


def datacenter(emu: JiraEmulator, token: str = SANDBOX_PAT, **kw: Any) -> Jira:
    emu.deployment = "Server"
    return Jira(emu.url, token=token, timeout=5, **kw)


def status_of(exc: pytest.ExceptionInfo[requests.HTTPError]) -> int:
    return int(exc.value.response.status_code)


def test_cloud_token_and_datacenter_pat_and_what_401_looks_like(emu: JiraEmulator) -> None:
    assert cloud(emu).myself()["emailAddress"] == SANDBOX_USER
    assert "accountId" in cloud(emu).myself()
    with pytest.raises(requests.HTTPError) as bad:
        cloud(emu, token="ATATT-wrong").myself()
    assert status_of(bad) == 401
    assert bad.value.response.headers["X-Seraph-LoginReason"] == "AUTHENTICATED_FAILED"
    # Cloud takes no personal access tokens
    with pytest.raises(requests.HTTPError) as pat_on_cloud:
        Jira(emu.url, token=SANDBOX_PAT, timeout=5).myself()
    assert status_of(pat_on_cloud) == 401
    dc = datacenter(emu)
    assert dc.myself()["name"] == "harness-bot"
    assert dc.get_server_info()["deploymentType"] == "Server"
    # an expired token: it worked, then the site stops accepting it
    emu.control("revoke_token", {"token": SANDBOX_PAT})
    with pytest.raises(requests.HTTPError) as expired:
        dc.myself()
    assert status_of(expired) == 401


def test_server_info_and_projects_for_the_prefix_check(emu: JiraEmulator) -> None:
    jira = cloud(emu)
    info = jira.get_server_info()
    assert info["deploymentType"] == "Cloud" and info["baseUrl"] == emu.url
    assert [p["key"] for p in jira.projects()] == ["AAA", "BBB"]
    assert jira.get_project("AAA")["lead"]["displayName"] == "Harness Bot"
    with pytest.raises(requests.HTTPError) as missing:
        jira.get_project("ZZZ")
    assert status_of(missing) == 404 and "ZZZ" in str(missing.value)


def test_an_issue_with_its_fields_comments_links_and_expansions(emu: JiraEmulator) -> None:
    jira = cloud(emu)
    issue = jira.issue("AAA-101", expand="renderedFields,names,transitions,changelog")
    f = issue["fields"]
    assert f["summary"].startswith("Bulk discount") and f["status"]["name"] == "To Do"
    assert f["description"].startswith("An order of 10 x 5.00")
    assert f["labels"] == ["pricing", "customer"] and f["assignee"] is None
    assert f["reporter"]["displayName"] == "sam" and f["priority"]["name"] == "High"
    assert f["created"] == "2026-03-03T10:00:00.000+0000"
    assert [c["body"] for c in f["comment"]["comments"]] == ["Also seen on ORD-42"]
    (link,) = f["issuelinks"]
    assert link["type"]["outward"] == "causes" and link["outwardIssue"]["key"] == "AAA-87"
    assert issue["renderedFields"]["description"].startswith("<p>An order")
    assert issue["names"]["summary"] == "Summary"
    assert {t["name"] for t in issue["transitions"]} == {"In Progress", "In Review", "Done"}
    assert issue["changelog"]["total"] == 0
    only = jira.issue("AAA-101", fields="summary,status")["fields"]
    assert set(only) == {"summary", "status"}
    # the other side of the link, and v3's Atlassian Document Format
    done = cloud(emu).issue("AAA-87")["fields"]
    assert done["issuelinks"][0]["inwardIssue"]["key"] == "AAA-101"
    assert done["resolution"]["name"] == "Done" and done["resolutiondate"]
    v3 = JiraCloud(emu.url, username=SANDBOX_USER, password=SANDBOX_TOKEN, timeout=5)
    description = v3.get_issue("AAA-101")["fields"]["description"]
    assert description["type"] == "doc" and len(description["content"]) == 2
    with pytest.raises(requests.HTTPError) as missing:
        jira.issue("AAA-999")
    assert status_of(missing) == 404
    assert "does not exist" in str(missing.value)


@pytest.mark.parametrize(
    ("jql", "keys"),
    [
        ("project = AAA ORDER BY key ASC", ["AAA-87", "AAA-101"]),
        ("key in (AAA-87, BBB-2) ORDER BY created DESC", ["AAA-87", "BBB-2"]),
        ('status = "Done"', ["AAA-87"]),
        ("status != Done AND project = AAA", ["AAA-101"]),
        ('text ~ "discount"', ["AAA-101"]),
        ('comment ~ "ORD-42"', ["AAA-101"]),
        ("labels in (customer) OR assignee = alex ORDER BY key", ["AAA-87", "AAA-101"]),
        ("assignee is EMPTY AND project = AAA", ["AAA-101"]),
        ('created >= "2026-03-01" ORDER BY created', ["AAA-101"]),
        ("priority > Medium", ["AAA-101"]),
        ("project = BBB AND NOT (summary ~ filler)", []),
    ],
)
def test_jql_subset_on_data_center(emu: JiraEmulator, jql: str, keys: list[str]) -> None:
    result = datacenter(emu).jql(jql, fields="summary")
    assert [i["key"] for i in result["issues"]] == keys


def test_data_center_search_pages_with_start_at_and_refuses_bad_queries(emu: JiraEmulator) -> None:
    jira = datacenter(emu)
    seen, start = [], 0
    while True:
        page = jira.jql("project = BBB ORDER BY key ASC", start=start, limit=3, fields="summary")
        assert page["total"] == 7 and page["maxResults"] == 3
        seen += [i["key"] for i in page["issues"]]
        start += 3
        if start >= page["total"]:
            break
    assert seen == [f"BBB-{n}" for n in range(1, 8)]
    # the search default leaves comments out (they are not navigable)
    default = jira.get("rest/api/2/search", params={"jql": "key = AAA-101"})
    assert "comment" not in default["issues"][0]["fields"]
    for bad, words in [
        ("project = AAA AND", "Error in the JQL Query"),
        ("colour = red", "Field 'colour' does not exist"),
        ("key = AAA-999", "An issue with key 'AAA-999' does not exist"),
        ("project = ZZZ", "The value 'ZZZ' does not exist for the field 'project'"),
    ]:
        with pytest.raises(requests.HTTPError) as refused:
            jira.jql(bad)
        assert status_of(refused) == 400 and words in str(refused.value), bad


def test_cloud_search_is_the_enhanced_one_with_next_page_tokens(emu: JiraEmulator) -> None:
    jira = cloud(emu)
    with pytest.raises(requests.HTTPError) as gone:
        jira.get("rest/api/2/search", params={"jql": "project = BBB"})
    assert status_of(gone) == 410  # removed from Cloud; the library's jql() goes round it
    assert [i["key"] for i in jira.jql("project = AAA ORDER BY key")["issues"]] == [
        "AAA-87",
        "AAA-101",
    ]
    keys, token = [], None
    while True:
        page = jira.enhanced_jql(
            "project = BBB ORDER BY key DESC", fields="summary", nextPageToken=token, limit=3
        )
        keys += [i["key"] for i in page["issues"]]
        assert "total" not in page
        if page["isLast"]:
            break
        token = page["nextPageToken"]
    assert keys == [f"BBB-{n}" for n in range(7, 0, -1)]
    bare = jira.enhanced_jql("key = AAA-101", fields=None)["issues"][0]
    assert set(bare) == {"id", "key", "self"}


def test_comments_with_properties_find_one_after_a_lost_answer(emu: JiraEmulator) -> None:
    jira = cloud(emu)
    added = jira.issue_add_comment("AAA-101", "Looking into it.")
    assert added["author"]["emailAddress"] == SANDBOX_USER
    edited = jira.issue_edit_comment("AAA-101", added["id"], "Looking into it (edited).")
    assert edited["body"].endswith("(edited).") and edited["updateAuthor"]["displayName"]
    # the answer to a comment POST never arrives: the comment exists, and its property finds it
    emu.control("fault", {"kind": "lost", "match": "/comment", "method": "POST"})
    key = {"key": "harness.outbox", "value": {"id": "AAA-101:comment:1"}}
    with pytest.raises(requests.ConnectionError):
        jira.post(
            "rest/api/2/issue/AAA-101/comment", data={"body": "Fixed in !7", "properties": [key]}
        )
    listed = jira.get("rest/api/2/issue/AAA-101/comment", params={"expand": "properties"})
    assert listed["total"] == 3
    mine = [c for c in listed["comments"] if key in c["properties"]]
    assert [c["body"] for c in mine] == ["Fixed in !7"]
    # properties are not shown unless asked for; the entity-property API sees them too
    assert "properties" not in jira.issue_get_comments("AAA-101")["comments"][0]
    assert jira.get_comment_properties_keys(mine[0]["id"])["keys"][0]["key"] == "harness.outbox"
    assert jira.get(f"rest/api/2/comment/{mine[0]['id']}/properties/harness.outbox")["value"] == {
        "id": "AAA-101:comment:1"
    }
    newest = jira.get("rest/api/2/issue/AAA-101/comment", params={"orderBy": "-created"})
    assert newest["comments"][0]["body"] == "Fixed in !7"
    v3 = JiraCloud(emu.url, username=SANDBOX_USER, password=SANDBOX_TOKEN, timeout=5)
    adf_body = {
        "type": "doc",
        "version": 1,
        "content": [{"type": "paragraph", "content": [{"type": "text", "text": "in ADF"}]}],
    }
    assert v3.post("rest/api/3/issue/AAA-101/comment", data={"body": adf_body})["body"] == adf_body
    with pytest.raises(requests.HTTPError) as plain_on_v3:
        v3.post("rest/api/3/issue/AAA-101/comment", data={"body": "plain"})
    assert status_of(plain_on_v3) == 400
    with pytest.raises(requests.HTTPError) as empty:
        jira.issue_add_comment("AAA-101", "  ")
    assert status_of(empty) == 400
    # one comment by id, a property set afterwards, a deletion; the state dump shows it all
    cid = added["id"]
    # Jira stores the PUT body as the value; the library's set_comment_property wraps it in
    # {"value": …} (so it would read back wrapped): the bare call is the faithful one
    jira.put(f"rest/api/2/comment/{cid}/properties/harness.note", data={"n": 1})
    one = jira.get(f"rest/api/2/issue/AAA-101/comment/{cid}", params={"expand": "properties"})
    assert one["properties"] == [{"key": "harness.note", "value": {"n": 1}}]
    jira.delete(f"rest/api/2/issue/AAA-101/comment/{cid}")
    with pytest.raises(requests.HTTPError) as gone:
        jira.get(f"rest/api/2/issue/AAA-101/comment/{cid}")
    assert status_of(gone) == 404
    dumped = {i["key"]: i for i in emu.control("state", {})["issues"]}
    kept = dumped["AAA-101"]["fields"]["comment"]["comments"]
    assert [c["properties"] for c in kept if c["body"] == "Fixed in !7"] == [
        {"harness.outbox": {"id": "AAA-101:comment:1"}}
    ]


def test_transitions_by_id_and_name_and_an_invalid_id(emu: JiraEmulator) -> None:
    jira = cloud(emu)
    offered = jira.get_issue_transitions("AAA-101")
    assert {(t["id"], t["to"]) for t in offered} == {
        (21, "In Progress"),
        (31, "In Review"),
        (41, "Done"),
    }
    jira.set_issue_status_by_transition_id("AAA-101", 21)
    assert jira.get_issue_status("AAA-101") == "In Progress"
    jira.set_issue_status("AAA-101", "Done", update={"comment": [{"add": {"body": "Shipped."}}]})
    issue = jira.issue("AAA-101", expand="changelog")
    assert issue["fields"]["resolution"]["name"] == "Done" and issue["fields"]["resolutiondate"]
    assert [h["items"][0]["toString"] for h in issue["changelog"]["histories"]] == [
        "In Progress",
        "Done",
    ]
    assert issue["fields"]["comment"]["comments"][-1]["body"] == "Shipped."
    with pytest.raises(requests.HTTPError) as invalid:
        jira.set_issue_status_by_transition_id("AAA-101", 41)  # already Done
    assert status_of(invalid) == 400 and "Transition id '41' is not valid" in str(invalid.value)
    with pytest.raises(requests.HTTPError) as unknown:
        jira.get_issue_transitions("AAA-999")
    assert status_of(unknown) == 404


def test_assignee_and_user_search_on_both_deployments(emu: JiraEmulator) -> None:
    jira = cloud(emu)
    (alex,) = jira.user_find_by_user_string(query="alex")
    jira.assign_issue("AAA-101", alex["accountId"])
    assert jira.issue("AAA-101")["fields"]["assignee"]["accountId"] == alex["accountId"]
    jira.assign_issue("AAA-101", None)
    assert jira.issue("AAA-101")["fields"]["assignee"] is None
    with pytest.raises(requests.HTTPError) as nobody:
        jira.assign_issue("AAA-101", "no-such-account")
    assert status_of(nobody) == 400 and "cannot be assigned" in str(nobody.value)
    dc = datacenter(emu)
    assert [u["name"] for u in dc.user_find_by_user_string(username="sam")] == ["sam"]
    dc.assign_issue("AAA-101", "sam")
    assert dc.issue("AAA-101")["fields"]["assignee"]["name"] == "sam"


@pytest.mark.parametrize("status", [401, 403, 404, 500, 503])
def test_injected_statuses_reach_the_library_as_http_errors(emu: JiraEmulator, status: int) -> None:
    emu.control("fault", {"kind": "status", "status": status, "match": "/issue/AAA-101"})
    with pytest.raises(requests.HTTPError) as failed:
        cloud(emu).issue("AAA-101")
    assert status_of(failed) == status
    assert cloud(emu).issue("AAA-101")["key"] == "AAA-101"  # times: 1 by default


def test_429_is_retried_once_after_retry_after_and_the_wait_is_bounded(emu: JiraEmulator) -> None:
    emu.control("fault", {"kind": "status", "status": 429, "match": "/issue/", "times": 1})
    started = time.monotonic()
    assert cloud(emu).issue("AAA-101")["key"] == "AAA-101"
    assert 0.9 <= time.monotonic() - started < 3  # Retry-After: 1 honoured
    emu.control(
        "fault",
        {
            "kind": "status",
            "status": 429,
            "match": "/issue/",
            "times": 2,
            "headers": {"Retry-After": "3600"},
        },
    )
    started = time.monotonic()
    with pytest.raises(requests.HTTPError) as limited:
        cloud(emu, max_backoff_seconds=1).issue("AAA-101")
    assert time.monotonic() - started < 3  # one bounded wait, then the 429 surfaces
    headers = limited.value.response.headers
    assert status_of(limited) == 429 and headers["Retry-After"] == "3600"
    assert headers["X-RateLimit-Remaining"] == "0" and headers["RateLimit-Reason"]


def test_dropped_hung_slow_and_method_matched_faults(emu: JiraEmulator) -> None:
    emu.control("fault", {"kind": "drop", "match": "/myself"})
    with pytest.raises(requests.ConnectionError):
        cloud(emu).myself()
    emu.control("fault", {"kind": "hang", "match": "/myself", "seconds": 5})
    with pytest.raises(requests.exceptions.Timeout):
        Jira(emu.url, username=SANDBOX_USER, password=SANDBOX_TOKEN, cloud=True, timeout=1).myself()
    emu.control("clear_faults", {})
    emu.control("fault", {"kind": "delay", "match": "/myself", "seconds": 0.4})
    started = time.monotonic()
    cloud(emu).myself()
    assert time.monotonic() - started >= 0.4
    emu.control(
        "fault",
        {"kind": "status", "status": 500, "match": "/comment", "method": "POST", "times": -1},
    )
    assert cloud(emu).issue_get_comments("AAA-101")["total"] == 1  # GET is not matched
    with pytest.raises(requests.HTTPError):
        cloud(emu).issue_add_comment("AAA-101", "x")
    emu.control("clear_faults", {})
    assert cloud(emu).issue_add_comment("AAA-101", "x")["body"] == "x"


def test_the_search_index_lags_behind_writes_when_told_to(emu: JiraEmulator) -> None:
    emu.control("set_lag", {"seconds": 0.6})
    jira = cloud(emu)
    jira.issue_add_comment("AAA-87", "zebra crossing")
    assert jira.enhanced_jql('comment ~ "zebra"', fields="summary")["issues"] == []
    assert jira.issue_get_comments("AAA-87")["total"] == 1  # the issue itself is consistent
    time.sleep(0.7)
    assert [
        i["key"] for i in jira.enhanced_jql('comment ~ "zebra"', fields="summary")["issues"]
    ] == ["AAA-87"]
