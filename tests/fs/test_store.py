"""L1: atomic JSON state under a lock — real files, real threads, real processes."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness_cli.errors import StateError
from harness_cli.state import files
from harness_cli.state.models import ChannelCursor, SlackCursors
from harness_cli.state.store import JsonFile, atomic_write_bytes


def _bump(path: str, key: str, times: int) -> None:
    handle = JsonFile(Path(path), SlackCursors)
    for _ in range(times):
        with handle.update() as state:
            cur = state.channels.setdefault(key, ChannelCursor())
            cur.empty_polls += 1


def test_missing_file_reads_as_empty_model() -> None:
    assert files.slack_cursors().read().channels == {}


def test_update_round_trips_and_writes_a_version() -> None:
    with files.slack_cursors().update() as state:
        state.channels["C1"] = ChannelCursor(oldest="1.5")
    raw = json.loads(files.slack_cursors().path.read_text())
    assert raw["schema_version"] == 1
    assert files.slack_cursors().read().channels["C1"].oldest == "1.5"


def test_failed_block_writes_nothing() -> None:
    handle = files.slack_cursors()
    with handle.update() as state:
        state.channels["C1"] = ChannelCursor(oldest="1")
    with pytest.raises(RuntimeError), handle.update() as state:
        state.channels["C1"].oldest = "2"
        raise RuntimeError("boom")
    assert handle.read().channels["C1"].oldest == "1"


def test_many_threads_lose_no_update(tmp_path: Path) -> None:
    path = tmp_path / "counter.json"
    workers = [threading.Thread(target=_bump, args=(str(path), "C", 25)) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert JsonFile(path, SlackCursors).read().channels["C"].empty_polls == 200


def test_several_processes_lose_no_update(tmp_path: Path) -> None:
    path = tmp_path / "counter.json"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_bump, args=(str(path), "C", 30)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert JsonFile(path, SlackCursors).read().channels["C"].empty_polls == 120


WRITER = """
import sys
from pathlib import Path
from harness_cli.state.store import atomic_write_bytes
path = Path(sys.argv[1])
i = 0
while True:
    i += 1
    # big enough that a non-atomic write would often be caught half done
    atomic_write_bytes(path, (('{"n": %d, "pad": "' % i) + "x" * 200000 + '"}').encode())
"""


def test_writer_killed_mid_write_leaves_old_or_new_content(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    atomic_write_bytes(path, b'{"n": 0, "pad": ""}')
    for _ in range(5):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)])
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        data = json.loads(path.read_bytes())  # never torn
        assert isinstance(data["n"], int)
    # killed writers may leave temp files, never a half-written target
    assert path.exists()


def test_corrupt_file_is_moved_aside_with_a_clear_error() -> None:
    handle = files.slack_cursors()
    handle.path.parent.mkdir(parents=True, exist_ok=True)
    handle.path.write_text('{"channels": {')
    with pytest.raises(StateError) as err:
        handle.read()
    assert "moved it to" in err.value.line() and err.value.exit_code == 2
    aside = list(handle.path.parent.glob("slack-cursors.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_text() == '{"channels": {'
    assert not handle.path.exists()
    assert handle.read().channels == {}  # the next run starts it empty, knowingly


def test_the_kill_switch_fails_closed_instead_and_keeps_its_bytes_once() -> None:
    handle = files.oncall_state()
    handle.path.parent.mkdir(parents=True, exist_ok=True)
    handle.path.write_text('{"paused": fal')
    assert handle.read().paused is True and handle.read().paused is True
    assert handle.path.read_text() == '{"paused": fal'  # left where it is
    [copy] = handle.unreadable_copies()
    assert copy.read_text() == '{"paused": fal'
    handle.mark_told(copy)
    assert handle.unreadable_copies() == []
    with handle.update() as state:  # an explicit resume writes a good file over it
        state.paused = False
    assert handle.read().paused is False


def test_file_from_a_newer_harness_is_left_untouched() -> None:
    handle = files.slack_cursors()
    handle.path.parent.mkdir(parents=True, exist_ok=True)
    handle.path.write_text('{"schema_version": 99, "paused": true}')
    with pytest.raises(StateError, match="newer"):
        handle.read()
    assert json.loads(handle.path.read_text())["schema_version"] == 99


def test_unknown_keys_written_by_a_newer_harness_survive_a_rewrite() -> None:
    handle = files.oncall_state()
    handle.path.parent.mkdir(parents=True, exist_ok=True)
    handle.path.write_text('{"schema_version": 1, "paused": false, "future_flag": 7}')
    with handle.update() as state:
        state.paused = True
    assert json.loads(handle.path.read_text())["future_flag"] == 7
