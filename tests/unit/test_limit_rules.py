"""The box's limits and the bounded buffers, one rule at a time (#28 R10, R11): the harness's
own Bash tool in real bubblewrap under small ``sandbox.limits``, the buffers on real pipes,
the CI job log through python-gitlab against the GitLab emulator, doctor's lines."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from harness_cli import bounded
from harness_cli.agents import sandbox, tools
from harness_cli.agents.sandbox_settings import LimitSettings

needs_box = pytest.mark.skipif(
    sandbox.problem("anthropic") is not None, reason="bubblewrap does not run here"
)


def bash(tmp_path: Path, command: str, settings: LimitSettings, *, boxed: bool = True) -> str:
    """The anthropic runtime's Bash tool, as an agent calls it; a failure's text returned."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(exist_ok=True)
    work.mkdir(exist_ok=True)
    box = sandbox.view_for(work, [work], [], home) if boxed else None
    ctx = tools.ToolContext(work, work, time.monotonic() + 60, (work,), box, home, settings)
    try:
        return tools.call(tools.TOOLS["Bash"], ctx, {"command": command})
    except tools.ToolFailure as exc:
        return str(exc)


def test_a_buffer_keeps_the_head_and_the_tail_and_counts_the_middle() -> None:
    buf = bounded.Bounded(4, 6)
    for chunk in (b"abc", b"defgh", b"ijklmnop", b"qrstuvwxyz"):
        buf.feed(chunk)
    assert (bytes(buf.head), bytes(buf.tail), buf.dropped, buf.total) == (
        b"abcd",
        b"uvwxyz",
        16,
        26,
    )
    assert buf.text() == "abcd\n… (16 bytes left out) …\nuvwxyz"


def test_an_endless_line_is_skipped_not_held(tmp_path: Path) -> None:
    path = tmp_path / "events"
    path.write_bytes(b'{"a": 1}\n' + b"x" * 100_000 + b"\n" + b'{"b": 2}\n')
    with path.open("rb") as pipe:
        assert list(bounded.lines(pipe, 4096)) == [b'{"a": 1}\n', b'{"b": 2}\n']


def test_a_command_that_closes_its_output_still_ends_at_its_timeout(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    ctx = tools.ToolContext(work, work, time.monotonic() + 60, (work,), None, home)
    started = time.monotonic()
    with pytest.raises(tools.ToolFailure, match="timed out"):
        tools.call(
            tools.TOOLS["Bash"],
            ctx,
            {"command": "echo hi; exec >&- 2>&-; sleep 30", "timeout": 1000},
        )
    assert time.monotonic() - started < 15


def test_a_huge_file_is_read_a_line_at_a_time(tmp_path: Path) -> None:
    """The Read tool on a file the agent wrote (20 MB in one line): only what is shown is read."""
    path = tmp_path / "one-line.log"
    path.write_bytes(b"z" * (20 << 20) + b"\r\nsecond line\nthird\n")
    ctx = tools.ToolContext(tmp_path, tmp_path, time.monotonic() + 60, (tmp_path,))
    text = tools.call(tools.TOOLS["Read"], ctx, {"file_path": str(path)})
    first, second, third = text.split("\n")
    assert first == "1\t" + "z" * tools.LINE_CHARS
    assert (second, third) == ("2\tsecond line", "3\tthird")
    assert tools.call(tools.TOOLS["Read"], ctx, {"file_path": str(path), "offset": 3}) == "3\tthird"
    far = tools.call(tools.TOOLS["Read"], ctx, {"file_path": str(path), "offset": 9})
    assert far == "(no lines from 9; the file has 3)"
    with pytest.raises(tools.ToolFailure, match="larger than 16 MB"):
        tools.call(tools.TOOLS["Edit"], ctx, {"file_path": str(path), "old_string": "third",
                                              "new_string": "3rd"})  # fmt: skip


@needs_box
def test_a_command_cannot_write_a_file_past_the_size_limit(tmp_path: Path) -> None:
    out = bash(
        tmp_path, "head -c 3M /dev/zero > big; echo written $?", LimitSettings(file_size_mb=1)
    )
    assert (tmp_path / "work" / "big").stat().st_size == 1 << 20
    assert "written 153" in out  # 128 + SIGXFSZ: the write was stopped at 1 MB


@needs_box
def test_a_command_cannot_spin_past_its_cpu_time(tmp_path: Path) -> None:
    started = time.monotonic()
    out = bash(
        tmp_path, "python3 -c 'while True: pass'; echo spun $?", LimitSettings(cpu_seconds=1)
    )
    assert "spun 137" in out or "spun 152" in out  # SIGKILL / SIGXCPU at the limit
    assert time.monotonic() - started < 30


@needs_box
def test_a_process_cannot_allocate_past_the_memory_limit(tmp_path: Path) -> None:
    script = "b = bytearray(200 * 2**20); print('got', len(b) >> 20)"
    assert "got 200" in bash(tmp_path, f'python3 -c "{script}"', LimitSettings(memory_mb=512))
    out = bash(tmp_path, f'python3 -c "{script}"', LimitSettings(memory_mb=128))
    assert "got 200" not in out and "MemoryError" in out


def test_what_a_command_leaves_running_is_killed_with_it(tmp_path: Path) -> None:
    """Unboxed (sandbox.required: false) a daemon that left the command's process group and
    dropped the run's token (what the watchdog finds processes by) is still in the command's
    cgroup, and does not outlive the command."""
    from harness_cli.agents import cgroups

    if not cgroups.plan("auto").way:
        pytest.skip(f"no cgroup on this machine: {cgroups.plan('auto').detail}")
    marker = tmp_path / "alive"
    daemon = f"env -u HARNESS_AGENT_RUN setsid sh -c 'sleep 3; touch {marker}'"
    command = f"{daemon} >/dev/null 2>&1 < /dev/null & echo started"
    assert "started" in bash(tmp_path, command, LimitSettings(), boxed=False)
    time.sleep(4)
    assert not marker.exists()


@pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/usr/bin/python3").exists() or sandbox.problem("anthropic"),
    reason="needs root (to become nobody), a system python3 and bubblewrap",
)
def test_for_a_user_the_process_limit_counts_the_box_alone() -> None:
    """RLIMIT_NPROC counts a user's processes everywhere; set inside the box's own user
    namespace it counts the box's. As nobody, with 40 processes already running outside and
    no cgroup, a command still gets its 32 — and no more."""
    probe = subprocess.run(["/usr/bin/python3", "-c", "import sys; print(sys.version_info[:2])"],
                           capture_output=True, text=True, check=False)  # fmt: skip
    if probe.stdout.strip() != str(tuple(sys.version_info[:2])):
        pytest.skip("the system python3 is not this python's version")
    site = next(p for p in sys.path if p.endswith("site-packages"))
    repo = Path(__file__).resolve().parents[2]
    tmp_path = Path(tempfile.mkdtemp(prefix="harness-nproc-"))  # one nobody may enter
    tmp_path.chmod(0o755)
    shutil.copytree(repo / "harness_cli", tmp_path / "pkg" / "harness_cli")
    script = tmp_path / "probe.py"
    script.write_text(
        "import json, sys, tempfile, time\n"
        "from pathlib import Path\n"
        "from harness_cli.agents import sandbox, tools\n"
        "from harness_cli.agents.sandbox_settings import LimitSettings\n"
        "root = Path(tempfile.mkdtemp()); (root / 'h').mkdir(); (root / 'w').mkdir()\n"
        "box = sandbox.view_for(root / 'w', [root / 'w'], [], root / 'h')\n"
        "ctx = tools.ToolContext(root / 'w', root / 'w', time.monotonic() + 60, (root,), box,\n"
        "    root / 'h', LimitSettings(pids=32, cgroup='off'))\n"
        "cmd = '''python3 -c 'import os, time\\nn = 0\\ntry:\\n    for _ in range(100):\\n"
        "        if os.fork() == 0:\\n            time.sleep(5); os._exit(0)\\n        n += 1\\n"
        "except OSError: pass\\nprint(\"forked\", n)' '''\n"
        "print(json.dumps(tools.call(tools.TOOLS['Bash'], ctx, {'command': cmd})))\n"
    )
    outside = 'for i in $(seq 40); do sleep 20 >/dev/null 2>&1 & pids="$pids $!"; done'
    run = f"{outside}; /usr/bin/python3 {script}; kill $pids"
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONPATH": f"{tmp_path / 'pkg'}:{site}"}
    try:
        proc = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", run],
            capture_output=True, text=True, env=env, cwd="/tmp", timeout=120, check=False,
        )  # fmt: skip
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)
    if "Permission denied" in proc.stderr:
        pytest.skip(f"nobody cannot read this checkout: {proc.stderr.strip()[-200:]}")
    said = json.loads(proc.stdout.strip().splitlines()[-1])
    forked = int(said.split()[-1])
    assert 24 < forked < 32, said


def test_a_ci_job_log_is_read_in_bounded_chunks(tmp_path: Path) -> None:
    """A job's log is what the agent's code printed: 12 MB of it come back as the head, the
    tail and the count of what was left out (python-gitlab against the GitLab emulator)."""
    from harness_cli.sandbox.gitlab_api import GitLabEmulator
    from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_PROJECT_PATH, seed_sample_project
    from harness_cli.services import gitlab as service

    emu = GitLabEmulator(tmp_path / "gitlab", ci_timeout=5, watch_interval=60)
    emu.start()
    try:
        seed_sample_project(emu)
        project = emu.state.project(SAMPLE_PROJECT_PATH)
        project.forced_results.append("failed")  # no CI run: the log is this test's
        pipeline = emu.state.create_pipeline(project, "0" * 40, "main", "push")
        job = pipeline.jobs[-1]
        job.trace[:] = ["start of the log\n", "y" * (12 << 20), "\nthe failing test\n"]
        live = service.LiveGitLab(service.GitLabSettings(url=emu.url, token="glpat-test"))
        text = live.job_trace(SAMPLE_PROJECT_PATH, job.id)
    finally:
        emu.stop()
    assert text.startswith("start of the log")
    assert text.endswith("the failing test\n")
    assert "bytes left out" in text
    assert len(text) < service.TRACE_HEAD_BYTES + service.TRACE_TAIL_BYTES + 100


def test_doctor_says_how_each_limit_is_applied(cli: Any, harness_ready: Path) -> None:
    code, out, _ = cli("doctor", "--offline", "--json")
    checks = {c["name"]: c for c in json.loads(out)["data"]}
    for name in ("box limit: processes", "box limit: memory", "box limit: CPU time, file size"):
        assert name in checks, sorted(checks)
        assert checks[name]["status"] in ("ok", "warn") or checks[name]["fix"]
    assert checks["box limit: CPU time, file size"]["status"] == "ok"  # a bounded command ran
    assert code in (0, 1)


def _v1_cgroups() -> Any:
    from harness_cli.agents import cgroups

    found = cgroups.plan("auto")
    if found.way != "cgroupfs" or found.version != 1:
        pytest.skip(f"the spawner thread is for cgroup v1 made by the harness: {found.detail}")
    return cgroups


def _watch_writes(paths: list[Path]) -> tuple[int, Any]:
    """An inotify descriptor reporting a write to any of ``paths`` (a cgroup's ``cgroup.procs``
    and ``tasks``: a process moved in writes one of them)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    assert fd >= 0
    for path in paths:
        assert libc.inotify_add_watch(fd, str(path).encode(), 0x2) >= 0  # IN_MODIFY
    return fd, libc


@needs_box
def test_a_command_is_born_in_its_cgroup_not_moved_into_it(tmp_path: Path) -> None:
    """Moving a process into a cgroup waits out an RCU grace period (~12 ms, most of what the
    limits cost per command): the command is forked by a thread already inside, so nothing
    writes the cgroup's process lists while it starts, and it is inside all the same."""
    found = _v1_cgroups().plan("auto")
    # where the run cgroup is (made here, once per process), seen from outside the box
    outside = bash(tmp_path, "cat /proc/self/cgroup", LimitSettings(), boxed=False)
    names = [line.rpartition("/")[2] for line in outside.splitlines() if "/harness-" in line]
    assert len(names) == 2 and len(set(names)) == 1, outside  # pids and memory, one name
    folders = [found.parents[c] / names[0] for c in ("pids", "memory")]
    fd, _ = _watch_writes([f / name for f in folders for name in ("cgroup.procs", "tasks")])
    try:
        said = bash(tmp_path, "cat /proc/self/cgroup; echo $$", LimitSettings(), boxed=False)
        try:
            moved = os.read(fd, 4096)
        except BlockingIOError:
            moved = b""
    finally:
        os.close(fd)
    assert moved == b"", "a process was moved into the run cgroup for this command"
    assert said.count(f"/{names[0]}\n") == 2, said  # and it is in it all the same


@needs_box
def test_the_memory_limit_kills_inside_the_command_never_the_harness(tmp_path: Path) -> None:
    """Three processes of 100 MB each under a 160 MB cgroup (each within its own RLIMIT_DATA):
    the cgroup's OOM killer picks among the command's processes; the harness, whose spawner
    thread sits in that cgroup, is passed over and lives on."""
    _v1_cgroups()
    hog = "python3 -c 'b = bytearray(100 << 20); import time; time.sleep(3)'"
    command = f"for i in 1 2 3; do {hog} & done; wait; echo waited"
    out = bash(tmp_path, command, LimitSettings(memory_mb=160))
    assert "waited" in out
    assert "Killed" in out, out  # the cgroup's OOM killer took one of the command's
    assert bash(tmp_path, "echo still here", LimitSettings(memory_mb=160)) == "still here\n"
