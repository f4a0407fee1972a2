"""L4: bad state is bad input. Every ``$HARNESS_HOME`` state file and ``case.json``, truncated,
binary, of the wrong types or from a newer harness, and then the subcommands that read it: each
exits 2 with one line naming the file (CONTRACT §1) — never 1, never a crash log — and a case
whose case.json is unreadable is listed as broken, not hidden."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness_cli.state import models

CASE = "AAA-7"
Corrupt = Callable[[bytes], bytes]

CORRUPTIONS: dict[str, Corrupt] = {
    "truncated": lambda good: good[: len(good) // 2],
    "binary": lambda good: b"\x00\xff\xfe\x89PNG\r\n\x1a\n" + bytes(range(256)),
    "empty": lambda good: b"",
    "wrong-top-level": lambda good: b"[1, 2, 3]\n",
    "future-schema": lambda good: json.dumps({"schema_version": 99}).encode(),
}


def _entry() -> models.ThreadEntry:
    return models.ThreadEntry(
        channel="C0SUPPORT", thread_ts="1700000000.000100", case_id=CASE, case_dir="/x"
    )


GOOD: dict[str, tuple[bytes, bytes]] = {
    # file -> (a valid content, the same with one field of the wrong type)
    "task-thread-map.json": (
        models.ThreadMap(threads={"C0SUPPORT/1": _entry()}).model_dump_json().encode(),
        b'{"schema_version": 1, "threads": {"C0SUPPORT/1": {"channel": ["C0SUPPORT"]}}}',
    ),
    "oncall_thread_map.json": (
        models.ThreadMap(threads={"C0SUPPORT/1": _entry()}).model_dump_json().encode(),
        b'{"schema_version": 1, "threads": 42}',
    ),
    "monitored-mrs.json": (
        models.MonitoredMrs(
            mrs={"g/p!1": models.MonitoredMr(project="g/p", iid=1, case_id=CASE, case_dir="/x")}
        )
        .model_dump_json()
        .encode(),
        b'{"schema_version": 1, "mrs": {"g/p!1": {"project": "g/p", "iid": "one"}}}',
    ),
    "patch-pr-state.json": (
        models.PatchPrState(cases={CASE: models.PatchPrEntry()}).model_dump_json().encode(),
        b'{"schema_version": 1, "cases": {"AAA-7": {"status": "exploded"}}}',
    ),
    "slack-cursors.json": (
        models.SlackCursors(channels={"C0SUPPORT": models.ChannelCursor()})
        .model_dump_json()
        .encode(),
        b'{"schema_version": 1, "channels": {"C0SUPPORT": {"empty_polls": "many"}}}',
    ),
    "socket-dedup": (
        models.DedupSet(seen={"C0SUPPORT/1": 1e12}).model_dump_json().encode(),
        b'{"schema_version": 1, "seen": {"C0SUPPORT/1": "soon"}}',
    ),
}

READERS: dict[str, list[list[str]]] = {
    "task-thread-map.json": [["poll-slack"]],
    "oncall_thread_map.json": [["poll-slack"], ["case", "show", CASE]],
    "monitored-mrs.json": [["mr-monitor"], ["status"]],
    "patch-pr-state.json": [["finalize", "--due"]],
    "slack-cursors.json": [["poll-slack"]],
    "socket-dedup": [["poll-slack"]],
}


def _variants(good: bytes, wrong_types: bytes) -> dict[str, bytes]:
    found = {name: corrupt(good) for name, corrupt in CORRUPTIONS.items()}
    found["wrong-types"] = wrong_types
    return found


def _assert_bad_input(code: int, err: str, name: str, home: Path, what: str) -> None:
    lines = [line for line in err.splitlines() if line.startswith("harness:")]
    assert code == 2, f"{what}: exit {code}, stderr: {err}"
    assert len(lines) == 1 and name in lines[0], f"{what}: {err}"
    assert "Traceback" not in err, f"{what}: {err}"
    crashes = list((home / "logs").glob("crash-*.log")) if (home / "logs").exists() else []
    assert not crashes, f"{what}: wrote a crash log {crashes}"


@pytest.fixture
def ready(cli, harness_ready: Path, slack_emu, monkeypatch: pytest.MonkeyPatch) -> Path:  # type: ignore[no-untyped-def]
    # GitLab is never reached: the state file is read first.
    monkeypatch.setenv("GITLAB_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("GITLAB_TOKEN", "glpat-never-used-here")
    code, _, err = cli("case", "new", "--project", "team-a", "--id", CASE, "--title", "t")
    assert code == 0, err
    return harness_ready


@pytest.mark.parametrize("name", sorted(GOOD))
def test_every_state_file_corruption_is_exit_2_naming_the_file(
    cli, ready: Path, tmp_path: Path, name: str
) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / "harness-home"
    good, wrong = GOOD[name]
    failures = []
    for variant, content in _variants(good, wrong).items():
        for argv in READERS[name]:
            (home / name).write_bytes(content)
            code, _, err = cli(*argv)
            try:
                _assert_bad_input(code, err, name, home, f"{name} {variant} → {' '.join(argv)}")
            except AssertionError as exc:
                failures.append(str(exc).splitlines()[0])
    assert not failures, "\n".join(failures)


CASE_CORRUPTIONS: dict[str, bytes] = {
    "truncated": b'{"schema_version": 1, "id": "AAA-7", "proj',
    "binary": b"\x00\xff\xfe" + bytes(range(256)),
    "empty": b"",
    "wrong-top-level": b'["AAA-7"]',
    "wrong-types": b'{"schema_version": 1, "id": "AAA-7", "project": ["team-a"], "status": 3}',
    "future-schema": json.dumps(
        {
            "schema_version": 99,
            "id": CASE,
            "project": "team-a",
            "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
        }
    ).encode(),
}

CASE_READERS = [
    ["case", "show", CASE],
    ["case", "close", CASE],
    ["case", "register-thread", CASE, "--channel", "C0SUPPORT", "--thread-ts", "1.000001"],
    ["investigate", CASE, "--no-post"],
    ["review", CASE],
    ["followup", CASE],
    ["consolidate", CASE],
    ["finalize", CASE],
    ["dev-agent", CASE, "--mode", "task"],
]


@pytest.mark.parametrize("variant", sorted(CASE_CORRUPTIONS))
def test_every_memory_json_corruption_is_exit_2_naming_the_file(
    cli, ready: Path, tmp_path: Path, variant: str
) -> None:  # type: ignore[no-untyped-def]
    """The case's memory (followup and consolidation) is a case file too."""
    home = tmp_path / "harness-home"
    path = tmp_path / "workspace" / "case-workspaces" / CASE / "memory.json"
    content = CASE_CORRUPTIONS[variant].replace(b'"AAA-7"', b'"x"')
    path.write_bytes(content if variant != "wrong-types" else b'{"turns": "many"}')
    code, _, err = cli("consolidate", CASE)
    _assert_bad_input(code, err, "memory.json", home, f"memory.json {variant} → consolidate")


@pytest.mark.parametrize("variant", sorted(CASE_CORRUPTIONS))
def test_every_case_json_corruption_is_exit_2_naming_the_file(
    cli, ready: Path, tmp_path: Path, variant: str
) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / "harness-home"
    path = tmp_path / "workspace" / "control" / CASE / "case.json"  # the record, not its mirror
    failures = []
    for argv in CASE_READERS:
        path.write_bytes(CASE_CORRUPTIONS[variant])
        code, _, err = cli(*argv)
        try:
            _assert_bad_input(code, err, "case.json", home, f"case.json {variant} → {argv}")
        except AssertionError as exc:
            failures.append(str(exc).splitlines()[0])
    assert not failures, "\n".join(failures)


def test_a_case_with_an_unreadable_case_json_is_listed_as_broken(
    cli, ready: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("case", "new", "--project", "team-a", "--id", "AAA-8", "--title", "ok")
    assert code == 0, err
    (tmp_path / "workspace" / "control" / CASE / "case.json").write_bytes(b'{"id": "AA')
    code, out, err = cli("case", "list", "--json")
    assert code == 0, err
    listed = {c["id"]: c for c in json.loads(out)["data"]}
    assert set(listed) == {CASE, "AAA-8"}
    assert listed[CASE]["status"] == "broken" and "case.json" in listed[CASE]["problem"]
    code, out, err = cli("case", "list")
    assert CASE in out and "broken" in out
    assert "case.json" in err  # what is wrong and how to fix it, once, on stderr


@pytest.mark.parametrize("name", ["harness.yaml", "projects.yaml"])
def test_a_config_from_a_newer_harness_is_refused(cli, ready: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    path = ready / name
    text = path.read_text()
    if "schema_version:" in text:
        text = "\n".join(
            "schema_version: 2" if line.startswith("schema_version:") else line
            for line in text.splitlines()
        )
    else:
        text = "schema_version: 2\n" + text
    path.write_text(text + "\n")
    code, _, err = cli("status")
    assert code == 2, err
    assert name in err and "schema_version" in err and "newer" in err
