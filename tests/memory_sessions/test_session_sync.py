"""The UserPromptSubmit sync between two machines, on real git (L3).

Each test drives two clones of one bare remote, as the laptop and the VM would, and asserts the
text that would be injected into claude: the other machine's new messages, never our own.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from harness_cli.errors import ServiceError
from harness_cli.memory.resume.model import (
    ACTIVE,
    LINECOUNT,
    SessionSyncSettings,
    project_dir_name,
    read_lines,
)
from harness_cli.memory.resume.start import fetch_once
from harness_cli.memory.resume.sync import (
    extract_delta,
    fetch_reset,
    lines_after_watermark,
    load_state,
    open_store,
    publish_own,
    sync_prompt,
)
from tests.memory_sessions.conftest import FAST, SESSION, Machine, git, injected


def test_alternating_prompts_each_machine_gets_exactly_the_other_machines_new_lines(
    laptop: Machine, vm: Machine
) -> None:
    laptop.say("L1 fix the invoice rounding", "L2 looking at rounding.py")
    first = laptop.sync()
    assert first.pushed and first.context == "" and first.lines == []

    vm.say("V1 run the tests on the VM")
    got = vm.sync()
    assert injected(got.context) == ["L1 fix the invoice rounding", "L2 looking at rounding.py"]
    assert got.context.startswith(
        "Session sync: the other machine (laptop) added 2 messages since the last sync."
    )

    laptop.say("L3 now the tax rule")
    got = laptop.sync()
    assert injected(got.context) == ["V1 run the tests on the VM"]
    assert "(vm) added 1 message since" in got.context

    vm.say("V2 tests pass", "V3 pushed the branch")
    got = vm.sync()
    assert injected(got.context) == ["L3 now the tax rule"]

    got = laptop.sync()
    assert injected(got.context) == ["V2 tests pass", "V3 pushed the branch"]

    # Nothing new on either side: nothing injected, nothing pushed.
    again = vm.sync()
    assert again.context == "" and not again.pushed


def test_a_machine_that_syncs_twice_in_a_row_never_gets_its_own_lines(
    laptop: Machine, vm: Machine
) -> None:
    vm.say("V1 hello")
    vm.sync()
    laptop.say("L1 first", "L2 second")
    assert injected(laptop.sync().context) == ["V1 hello"]
    laptop.say("L3 third")
    own = laptop.sync()  # the store now holds the laptop's own transcript
    assert own.context == "" and own.lines == [] and own.pushed
    assert injected(vm.sync().context) == ["L1 first", "L2 second", "L3 third"]


def test_the_swapped_order_bug_reads_the_machines_own_transcript_back(
    laptop: Machine, vm: Machine
) -> None:
    """The reference's bug: step 3 (overwrite) before step 2 (extract). Replayed with the
    shipped steps in the wrong order, then the shipped order on a twin scenario."""
    vm.say("V1 from the vm", "V2 also from the vm")
    vm.sync()
    laptop.say("L1 mine", "L2 mine too")
    laptop_git = open_store(laptop.env, FAST)
    assert laptop_git is not None
    state = load_state(laptop.env, SESSION)
    own = read_lines(laptop.transcript())
    assert fetch_reset(laptop_git)  # step 1
    assert publish_own(laptop_git, laptop.env, laptop.hook(), own, FAST)  # step 3 first (bug)
    folder = laptop.env.session_dir(SESSION)
    stored = read_lines(folder / ACTIVE)
    total = int((folder / LINECOUNT).read_text())
    wrong, _ = lines_after_watermark(stored, total, state.delivered.get("vm", 0))
    # The watermark-only extraction the bug ran now reads the laptop's own lines back …
    assert wrong == own and injected_texts(wrong) == ["L1 mine", "L2 mine too"]
    # … and the vm's lines are gone from the store before anyone read them.
    assert extract_delta(laptop.env, SESSION, state, own).lines == []

    # The shipped order on a fresh pair of sessions: the other machine's lines, only them.
    other = "7d3e9f20-5b1c-4c8e-a0f4-2e6d9b7c1a55"
    vm.say("V1 from the vm", "V2 also from the vm", session=other)
    vm.sync(session=other)
    laptop.say("L1 mine", "L2 mine too", session=other)
    right = laptop.sync(session=other)
    assert injected(right.context) == ["V1 from the vm", "V2 also from the vm"]


def injected_texts(lines: list[bytes]) -> list[str]:
    return [json.loads(line)["message"]["content"][0]["text"] for line in lines]


def test_truncation_never_redelivers_already_delivered_lines(laptop: Machine, vm: Machine) -> None:
    vm.say(*[f"V{i}" for i in range(900)])
    vm.sync()
    laptop.say("L1")
    assert len(laptop.sync().lines) == 900

    vm.say(*[f"V{i}" for i in range(900, 1200)])
    vm.sync()
    folder = vm.env.session_dir(SESSION)
    assert len(read_lines(folder / ACTIVE)) == 1000  # cut for the push …
    assert (folder / LINECOUNT).read_text() == "1200\n"  # … the true total kept
    got = laptop.sync()
    assert injected_texts(got.lines) == [f"V{i}" for i in range(900, 1200)]
    assert got.cut == 0

    vm.say("V1200", "V1201", "V1202", "V1203", "V1204")
    vm.sync()
    got = laptop.sync()
    assert injected(got.context) == ["V1200", "V1201", "V1202", "V1203", "V1204"]

    # Without .linecount (wc -l of the cut file) the watermark 1205 looks like a reset and the
    # whole stored tail comes back: the incident the file exists for.
    stored = read_lines(laptop.env.session_dir(SESSION) / ACTIVE)
    assert len(lines_after_watermark(stored, len(stored), 1205)[0]) == 1000
    assert lines_after_watermark(stored, 1205, 1205)[0] == []


def test_lines_cut_before_the_other_machine_saw_them_are_reported(
    laptop: Machine, vm: Machine
) -> None:
    vm.say(*[f"V{i}" for i in range(1500)])
    vm.sync()
    got = laptop.sync()
    assert len(got.lines) == 1000 and got.cut == 500
    assert "500 older lines of its transcript were cut" in got.context


def test_a_resumed_session_does_not_echo_the_shared_history(laptop: Machine, vm: Machine) -> None:
    """After a resume the vm's transcript starts with the laptop's records: the laptop gets
    only what the vm added (records are matched by uuid)."""
    laptop.say("L1 start here", "L2 ok")
    laptop.sync()
    vm.transcript().parent.mkdir(parents=True)
    vm.transcript().write_bytes(laptop.transcript().read_bytes())
    vm.say("V1 continued on the vm")
    vm.sync()
    laptop.say("L3 back on the laptop")
    assert injected(laptop.sync().context) == ["V1 continued on the vm"]


def test_the_throttle_skips_a_rapid_second_sync_and_a_later_one_runs(
    laptop: Machine, vm: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = SessionSyncSettings()  # the reference's 30 s
    monkeypatch.setenv("HARNESS_NOW", "2026-11-29T10:00:00Z")
    vm.say("V1")
    vm.sync(settings)
    laptop.say("L1")
    assert injected(laptop.sync(settings).context) == ["V1"]

    vm.say("V2")
    vm.sync(FAST)
    monkeypatch.setenv("HARNESS_NOW", "2026-11-29T10:00:29Z")
    skipped = laptop.sync(settings)
    assert skipped.skipped and skipped.skipped.startswith("throttled: last sync 29s ago")
    assert skipped.context == "" and skipped.attempts == 0

    monkeypatch.setenv("HARNESS_NOW", "2026-11-29T10:00:31Z")
    ran = laptop.sync(settings)
    assert ran.skipped is None and injected(ran.context) == ["V2"]


def test_concurrent_syncs_never_corrupt_the_index_nor_lose_a_line(
    laptop: Machine, vm: Machine
) -> None:
    patient = SessionSyncSettings(throttle_seconds=0, max_push_attempts=20, lock_timeout=120)
    laptop.say("L-seed")
    laptop.sync(patient)  # both clones exist before the race
    vm.say("V-seed")
    received: dict[str, list[bytes]] = {"laptop": [], "vm": vm.sync(patient).lines}
    errors: list[BaseException] = []
    guard = threading.Lock()

    def worker(machine: Machine, rounds: int) -> None:
        try:
            for i in range(rounds):
                with guard:  # claude appends whole lines; keep the test's appends whole too
                    machine.say(f"{machine.name}-{threading.get_ident()}-{i}")
                got = machine.sync(patient)
                with guard:
                    received[machine.name] += got.lines
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(m, 4)) for m in (laptop, vm) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    for machine in (laptop, vm):  # a last round delivers whatever raced past the others
        received[machine.name] += machine.sync(patient).lines
    received["laptop"] += laptop.sync(patient).lines

    laptop_own = read_lines(laptop.transcript())
    vm_own = read_lines(vm.transcript())
    assert sorted(received["vm"]) == sorted(laptop_own)  # each laptop line exactly once
    assert sorted(received["laptop"]) == sorted(vm_own)  # each vm line exactly once
    for machine in (laptop, vm):
        repo = machine.env.repo
        assert not (repo / ".git" / "index.lock").exists()
        git(repo, "fsck", "--no-progress")
        assert git(repo, "status", "--porcelain") == ""


def test_a_failed_push_keeps_the_delta_for_the_next_prompt(
    laptop: Machine, vm: Machine, remote: Path
) -> None:
    vm.say("V1")
    vm.sync()
    laptop.say("L1")
    laptop.sync()
    vm.say("V2")
    vm.sync()
    laptop.say("L2")
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'remote: storage full' >&2\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(ServiceError):
        laptop.sync()
    hook.unlink()
    got = laptop.sync()
    assert injected(got.context) == ["V2"] and got.pushed
    assert injected(vm.sync().context) == ["L2"]


def test_the_background_fetch_keeps_the_local_copy_current(laptop: Machine, vm: Machine) -> None:
    vm.say("V1")
    vm.sync()
    assert fetch_once(laptop.env, FAST, wait=5).skipped is None  # first use clones
    vm.say("V2")
    vm.sync()
    result = fetch_once(laptop.env, FAST, wait=5)
    assert result.updated
    assert (laptop.env.session_dir(SESSION) / LINECOUNT).read_text() == "2\n"


def test_no_remote_means_nothing_to_sync(laptop: Machine) -> None:
    from dataclasses import replace

    alone = replace(laptop.env, remote=None)
    laptop.say("L1")
    result = sync_prompt(laptop.hook(), alone, FAST)
    assert result.skipped and "HARNESS_SESSIONS_REMOTE" in result.skipped


def test_the_project_folder_name_matches_the_cli() -> None:
    assert project_dir_name("/tmp/ssx/work/my_proj.v2") == "-tmp-ssx-work-my-proj-v2"
