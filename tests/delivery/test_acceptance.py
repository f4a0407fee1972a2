"""L3: fail-closed acceptance on the real sample repository (planted bug, real pytest, real git).

The harness runs the checks and reads the exit codes; every later edit (committed or not)
invalidates a pass; the files the checks depend on are flagged when they change.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness_cli.delivery.acceptance import (
    DEFAULT_CHECKS,
    AcceptanceRecord,
    accepts_head,
    checks_changed,
    is_valid_for,
    latest_record,
    required_checks,
    run_acceptance,
)
from harness_cli.errors import ConfigError
from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_BUG_FIX, sample_project_files

PYTEST = ["python -m pytest -q"]


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The sample project with its planted bug, committed on main."""
    root = tmp_path / "repo"
    for rel, text in sample_project_files().items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    git(root, "init", "--quiet", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "Add the pricing service")
    return root


@pytest.fixture
def case_dir(tmp_path: Path) -> Path:
    return tmp_path / "workspace" / "case-workspaces" / "CASE-1"


def apply_fix(repo: Path) -> None:
    rel, old, new = SAMPLE_BUG_FIX
    path = repo / rel
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


def commit(repo: Path, message: str) -> str:
    git(repo, "commit", "--quiet", "-am", message)
    return git(repo, "rev-parse", "HEAD")


def test_planted_bug_gives_a_failed_record_written_to_disk(repo: Path, case_dir: Path) -> None:
    record = run_acceptance(repo, PYTEST, case_dir)
    assert record.passed is False
    (check,) = record.checks
    assert check.exit_code == 1
    assert check.argv[0] == sys.executable
    assert "2 failed" in check.stdout_tail
    assert record.head_sha == git(repo, "rev-parse", "HEAD")
    assert "1 of 1 checks failed" in record.reason
    assert not is_valid_for(record, repo)
    files = sorted(p.name for p in (case_dir / "acceptance").iterdir())
    assert "latest.json" in files
    assert any(name.endswith(f"-{record.head_sha[:12]}.json") for name in files)
    assert latest_record(case_dir) == record
    assert {"python", "git", "pytest", "harness"} <= set(record.tools)


def test_fix_committed_passes_for_head_and_any_later_edit_invalidates(
    repo: Path, case_dir: Path
) -> None:
    apply_fix(repo)
    head = commit(repo, "Apply the bulk discount at the threshold")
    record = run_acceptance(repo, PYTEST, case_dir)
    assert record.passed, record.reason
    assert record.head_sha == head
    assert record.dirty_paths == []
    assert record.checks[0].exit_code == 0
    assert accepts_head(record, head)
    assert is_valid_for(record, repo)

    readme = repo / "README.md"
    original = readme.read_text(encoding="utf-8")
    readme.write_text(original + "\nOne more line.\n", encoding="utf-8")
    assert not is_valid_for(record, repo), "an uncommitted edit must invalidate the pass"
    readme.write_text(original, encoding="utf-8")
    assert is_valid_for(record, repo), "the same bytes are the same snapshot"

    (repo / "notes.txt").write_text("an untracked file\n", encoding="utf-8")
    assert not is_valid_for(record, repo), "an untracked file is part of the snapshot"
    (repo / "notes.txt").unlink()

    readme.write_text(original + "\nCommitted.\n", encoding="utf-8")
    new_head = commit(repo, "Document the threshold")
    assert not is_valid_for(record, repo), "a later commit must invalidate the pass"
    assert not accepts_head(record, new_head)


def test_cache_files_do_not_count_as_changes(repo: Path, case_dir: Path) -> None:
    # Without a .gitignore, the bytecode pytest may leave behind shows up as untracked.
    apply_fix(repo)
    (repo / ".gitignore").unlink()
    git(repo, "commit", "--quiet", "-am", "Apply the fix and drop the ignore file")
    record = run_acceptance(repo, PYTEST, case_dir)
    assert record.passed, record.reason
    cache = repo / "pricing" / "__pycache__"
    cache.mkdir(exist_ok=True)
    (cache / "discount.cpython-311.pyc").write_bytes(b"\x00compiled")
    assert is_valid_for(record, repo)


def test_uncommitted_fix_passes_but_does_not_accept_the_commit(repo: Path, case_dir: Path) -> None:
    apply_fix(repo)
    record = run_acceptance(repo, PYTEST, case_dir)
    assert record.passed
    assert record.dirty_paths == [SAMPLE_BUG_FIX[0]]
    assert is_valid_for(record, repo)
    assert not accepts_head(record, git(repo, "rev-parse", "HEAD"))
    commit(repo, "Apply the bulk discount at the threshold")
    assert not is_valid_for(record, repo)


@pytest.mark.parametrize(
    ("checks", "why"),
    [
        ([], "no required checks configured"),
        (["no-such-command-xyz --flag"], "1 of 1 checks failed"),
        (["python -c 'raise SystemExit(3)'", "python -c 'pass'"], "1 of 2 checks failed"),
        (["python -c 'unclosed"], "1 of 1 checks failed"),
    ],
    ids=["no-checks", "missing-command", "one-of-two-fails", "unparseable"],
)
def test_fail_closed(repo: Path, case_dir: Path, checks: list[str], why: str) -> None:
    record = run_acceptance(repo, checks, case_dir)
    assert record.passed is False
    assert why in record.reason
    assert len(record.checks) == len(checks), "every check runs, even after a failure"


def test_a_check_that_hangs_is_killed_and_fails(repo: Path, case_dir: Path) -> None:
    record = run_acceptance(
        repo, ["python -c 'import time; time.sleep(30)'"], case_dir, timeout_s=0.5
    )
    (check,) = record.checks
    assert check.timed_out and check.exit_code is None
    assert check.duration_s < 10
    assert record.passed is False


def test_a_check_that_edits_the_tree_edits_only_its_clean_copy(repo: Path, case_dir: Path) -> None:
    """The checks run in a checkout of the snapshot (#28 R2, R6): what they write — a file, a
    symlink for the harness to write through later — never reaches the worktree."""
    before = (repo / "README.md").read_text()
    edit = (
        "python -c \"import os; open('README.md', 'a').write('changed by the check'); "
        "os.symlink('/etc/passwd', 'planted.json')\""
    )
    record = run_acceptance(repo, [edit], case_dir)
    assert record.checks[0].exit_code == 0, record.checks[0].output_tail
    assert (repo / "README.md").read_text() == before
    assert not (repo / "planted.json").exists() and not (repo / "planted.json").is_symlink()
    assert record.passed and record.dirty_paths == []


@pytest.mark.parametrize(
    "trick",
    [
        pytest.param({"pytest.py": "import sys\nsys.exit(0)\n"}, id="pytest.py-shadows-the-runner"),
        pytest.param({".pytest.ini": "[pytest]\naddopts = --collect-only\n"}, id="dot-pytest.ini"),
        pytest.param({"tests/pytest.ini": "[pytest]\naddopts = --co\n"}, id="pytest.ini-in-tests"),
        pytest.param(
            {"pytest.py": "import sys\nsys.exit(0)\n", ".gitignore": "pytest.py\n"},
            id="pytest.py-ignored",
        ),
        pytest.param({"unittest.py": "raise SystemExit(0)\n"}, id="stdlib-name-at-the-top"),
    ],
)
def test_acceptance_cannot_be_shadowed(repo: Path, case_dir: Path, trick: dict[str, str]) -> None:
    """The bug is left in; the change adds what would make the runner report success. The
    checks still fail (the runner is the harness's, the tree is what git sees), and the added
    file counts as a change to the checks (#28 R6)."""
    base = git(repo, "rev-parse", "HEAD")
    for rel, text in trick.items():
        (repo / rel).write_text(text)
    record = run_acceptance(repo, PYTEST, case_dir, base_sha=base)
    assert record.passed is False
    flagged = " ".join(record.checks_changed)
    assert any(rel in flagged for rel in trick), record.checks_changed


def test_a_file_hidden_by_info_exclude_never_reaches_the_checks(repo: Path, case_dir: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    (repo / "pytest.py").write_text("import sys\nsys.exit(0)\n")
    with (repo / ".git" / "info" / "exclude").open("a") as handle:
        handle.write("pytest.py\n")
    record = run_acceptance(repo, PYTEST, case_dir, base_sha=base)
    assert record.checks[0].exit_code == 1, record.checks[0].output_tail  # the real run
    assert ".git/info/exclude" in record.checks_changed and not record.passed


def test_checks_get_no_harness_credentials(
    repo: Path, case_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITLAB_TOKEN", "glpat-secret")
    monkeypatch.setenv("SLACK_USER_TOKEN", "xoxp-secret")
    probe = (
        'python -c "import os, sys; '
        "sys.exit(1 if {'GITLAB_TOKEN', 'SLACK_USER_TOKEN'} & set(os.environ) else 0)\""
    )
    assert run_acceptance(repo, [probe], case_dir).passed


def test_records_inside_the_worktree_do_not_invalidate_themselves(repo: Path) -> None:
    apply_fix(repo)
    commit(repo, "Apply the bulk discount at the threshold")
    inside = repo / "case"
    record = run_acceptance(repo, PYTEST, inside)
    assert record.passed
    assert record.excluded == ["case"]
    assert (inside / "acceptance" / "latest.json").is_file()
    assert is_valid_for(record, repo)


def test_record_is_plain_json_with_the_evidence(repo: Path, case_dir: Path) -> None:
    run_acceptance(repo, PYTEST, case_dir)
    data = json.loads((case_dir / "acceptance" / "latest.json").read_text())
    for key in ("head_sha", "snapshot_digest", "checks", "tools", "passed", "started_at"):
        assert key in data
    check = data["checks"][0]
    assert {"command", "exit_code", "duration_s", "stdout_tail", "stderr_tail"} <= set(check)
    assert AcceptanceRecord.model_validate(data).checks[0].exit_code == 1


def test_latest_record_missing_or_corrupt_is_none(case_dir: Path) -> None:
    assert latest_record(case_dir) is None
    (case_dir / "acceptance").mkdir(parents=True)
    (case_dir / "acceptance" / "latest.json").write_text("{not json")
    assert latest_record(case_dir) is None


def test_checks_changed_flags_what_the_checks_depend_on(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    apply_fix(repo)
    commit(repo, "Apply the bulk discount at the threshold")
    assert checks_changed(repo, base) == [], "a source-only change touches no check"

    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(text.replace('version = "0.1.0"', 'version = "0.1.1"'), encoding="utf-8")
    assert checks_changed(repo, base) == [], "[project] is not what pytest reads"

    pyproject.write_text(text.replace('testpaths = ["tests"]', 'testpaths = ["none"]'))
    tests = repo / "tests" / "test_discount.py"
    tests.write_text(tests.read_text(encoding="utf-8").replace("== Decimal", "!= Decimal"))
    commit(repo, "Loosen the tests")
    (repo / "tests" / "conftest.py").write_text("collect_ignore = ['test_discount.py']\n")
    assert checks_changed(repo, base) == [
        "pyproject.toml#tool.pytest",
        "tests/conftest.py",
        "tests/test_discount.py",
    ]
    assert checks_changed(repo, base, ["*.toml"]) == ["pyproject.toml"]


def test_required_checks_key() -> None:
    assert required_checks(SimpleNamespace()) == list(DEFAULT_CHECKS)
    assert required_checks(SimpleNamespace(required_checks=None)) == list(DEFAULT_CHECKS)
    assert required_checks(SimpleNamespace(required_checks=["make test"])) == ["make test"]
    with pytest.raises(ConfigError):
        required_checks(SimpleNamespace(required_checks="make test"))


def test_checks_run_in_the_agents_box(
    repo: Path, case_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks run code the agent wrote: outside the worktree they read and write nothing
    (the harness's home, the operator's files) and they reach no network."""
    home = tmp_path / "harness-home"
    home.mkdir()
    (home / "oncall-state.json").write_text('{"paused": false}')
    monkeypatch.setenv("HARNESS_HOME", str(home))
    outside = tmp_path / "outside.txt"
    listener = socket.create_server(("127.0.0.1", 0))  # reachable from the harness itself
    port = listener.getsockname()[1]
    probes = {
        "read": f"python -c \"open('{home / 'oncall-state.json'}').read()\"",
        "write": f"python -c \"open('{outside}', 'w').write('x')\"",
        "net": f"python -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\"",
    }
    try:
        record = run_acceptance(repo, list(probes.values()), case_dir)
    finally:
        listener.close()
    read, _write, net = (c.exit_code for c in record.checks)
    assert read == 1 and net == 1, record.checks
    assert not outside.exists()  # a write outside the worktree lands in the box's own /tmp
    assert record.passed is False
    # inside the worktree the checks work as before
    apply_fix(repo)
    commit(repo, "Apply the bulk discount at the threshold")
    assert run_acceptance(repo, PYTEST, case_dir).passed


def test_without_a_sandbox_the_checks_are_refused_unless_the_operator_opted_out(
    repo: Path, case_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness_cli.agents import sandbox
    from harness_cli.agents.sandbox_settings import SandboxSettings
    from harness_cli.errors import PolicyRefused

    monkeypatch.setattr(sandbox, "problem", lambda runtime: "bubblewrap (bwrap) is not installed")
    with pytest.raises(PolicyRefused, match="acceptance run"):
        run_acceptance(repo, PYTEST, case_dir)
    apply_fix(repo)
    commit(repo, "Apply the bulk discount at the threshold")
    assert run_acceptance(repo, PYTEST, case_dir, box=SandboxSettings(required=False)).passed
