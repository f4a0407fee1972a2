"""#28 R5, the rules of the pre-push scan on real repositories: what the remote really has
decides what is new (not a remote-tracking ref the agent's box may write), attributes are never
consulted, and a value is found however it is hidden."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from harness_cli.delivery import secret_scan
from harness_cli.services.git import Git

TOKEN = "glpat-unitunitunit0000"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Git:
    monkeypatch.setenv("GITLAB_TOKEN", TOKEN)
    bare = tmp_path / "remote.git"
    Git(tmp_path).run("init", "-q", "--bare", "--initial-branch=main", str(bare))
    seed = Git(tmp_path / "seed")
    seed.init("main")
    (seed.repo_dir / "app.py").write_text("print('hello')\n")
    seed.add()
    seed.commit("Start")
    seed.add_remote("origin", bare.as_uri())
    seed.push("origin", "main")
    git = Git.clone(bare.as_uri(), tmp_path / "work")
    git.run("checkout", "-qb", "harness/CASE-1")
    return git


def commit(git: Git, files: dict[str, bytes], message: str) -> str:
    for name, data in files.items():
        path = git.repo_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    git.add()
    git.run("commit", "-q", "-m", message)  # as the agent commits (Git.commit would redact)
    return git.run("rev-parse", "HEAD")


def scan(git: Git) -> list[str]:
    return [f.render() for f in secret_scan.scan_branch(git.repo_dir, "harness/CASE-1", "main")]


def test_a_forged_remote_tracking_ref_hides_no_commit(repo: Git) -> None:
    """The agent's box may write the mirror's refs: it points origin/<branch> at its own commit
    so the old scan (origin/<branch>..head) skipped it. The remote is asked instead."""
    hidden = commit(repo, {"settings.py": f"TOKEN = '{TOKEN}'\n".encode()}, "Add settings")
    repo.run("update-ref", "refs/remotes/origin/harness/CASE-1", hidden)
    repo.run("rm", "-q", "settings.py")
    commit(repo, {"README.md": b"# readme\n"}, "Add a readme")

    assert "settings.py:1 (GITLAB_TOKEN's value)" in scan(repo)


def test_attributes_are_never_consulted(repo: Git) -> None:
    key = "AKIAZ7QW3RT5YU8IOP2A"
    commit(
        repo,
        {".gitattributes": b"*.cfg -diff\n", "aws.cfg": f"key = {key}\n".encode()},
        "Add the cloud settings",
    )
    assert any(f.startswith("aws.cfg:1 (AWS Access Key)") for f in scan(repo))


def test_every_form_of_the_harness_s_own_secret(repo: Git, monkeypatch: pytest.MonkeyPatch) -> None:
    aws = "wJalr/XUtnFEMI+K7MDENG"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", aws)
    half = len(TOKEN) // 2
    b64 = base64.b64encode(("x" + TOKEN).encode()).decode()
    wrapped = "\n".join(b64[i : i + 8] for i in range(0, len(b64), 8))  # PEM-like wrapping
    commit(
        repo,
        {
            "logo.png": b"\x89PNG\r\n\x1a\n\0\0" + TOKEN.encode() + b"\0",
            "hex.txt": TOKEN.encode().hex().upper().encode() + b"\n",
            "split.js": f'const t = "{TOKEN[:half]}" +\n  "{TOKEN[half:]}";\n'.encode(),
            "wrapped.txt": wrapped.encode() + b"\n",
            "url.txt": b"https://x.example/?k="
            + aws.replace("/", "%2F").replace("+", "%2B").encode(),
        },
        "Add assets",
    )
    found = scan(repo)
    for expected in (
        "logo.png:3 (GITLAB_TOKEN's value)",
        "hex.txt:1 (GITLAB_TOKEN's value, encoded)",
        "split.js:1 (GITLAB_TOKEN's value, split)",
        "wrapped.txt:1 (GITLAB_TOKEN's value, split)",
    ):
        assert expected in found, (expected, found)
    assert "url.txt:1 (AWS_SECRET_ACCESS_KEY's value, encoded)" in found, found


def test_a_token_in_a_commit_message_or_a_file_name(repo: Git) -> None:
    commit(repo, {f"notes-{TOKEN}.txt": b"ok\n"}, f"Add notes\n\nSee {TOKEN[::-1]} and xoxb-1-2")
    commit(repo, {"b.txt": b"b\n"}, f"Add b\n\nRef {base64.b64encode(TOKEN.encode()).decode()}")
    found = scan(repo)
    assert "(a file name):0 (GITLAB_TOKEN's value)" in found
    assert any(f.startswith("commit ") and "encoded" in f for f in found), found


def test_honest_changes_and_old_shapes_are_not_flagged(repo: Git) -> None:
    """A shape already in a file before the change is not this change's: editing next to a
    fixture must not refuse the push."""
    commit(repo, {"fixture.txt": b"aws = AKIAZ7QW3RT5YU8IOP2A\n"}, "Add the fixture")
    repo.push("origin", "harness/CASE-1")
    (repo.repo_dir / "fixture.txt").write_text("aws = AKIAZ7QW3RT5YU8IOP2A\nname = demo\n")
    commit(repo, {"app.py": b"print('hello, world')\n"}, "Greet the world")

    assert scan(repo) == []


def test_a_value_cut_by_a_chunk_edge_is_still_found(
    repo: Git, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blobs are streamed in chunks (here 64 bytes, lines cut into 256-byte pieces): each
    secret form, placed at every offset around a chunk's edge, is found on its own line; a
    token shape across a piece's edge of a long line too, and inside a binary's run."""
    monkeypatch.setattr(secret_scan, "CHUNK", 64)
    monkeypatch.setattr(secret_scan, "LINE_PIECE", 256)
    monkeypatch.setattr(secret_scan, "PIECE_OVERLAP", 64)
    half = len(TOKEN) // 2
    forms = {
        "plain": TOKEN,
        "hex": TOKEN.encode().hex(),
        "split": f'"{TOKEN[:half]}" +\n    "{TOKEN[half:]}"',
    }
    files: dict[str, bytes] = {}
    for name, text in forms.items():
        for shift in range(0, 64, 7):
            files[f"{name}/{shift:02d}.txt"] = b"a\n" * 3 + b"p" * shift + text.encode() + b"\n"
    shape = "xoxb-" + "1234567890-" * 3 + "abcdefABCDEF"
    files["long.txt"] = b"q" * 240 + shape.encode() + b"q" * 600 + b"\n"
    files["blob.bin"] = b"\0" * 10 + b"\x01" * 50 + b"k=" + shape.encode() + b"\0" * 100
    commit(repo, files, "Add the fixtures")
    found = scan(repo)
    for name in forms:
        for shift in range(0, 64, 7):
            how = {"plain": "", "hex": ", encoded", "split": ", split"}[name]
            expected = f"{name}/{shift:02d}.txt:4 (GITLAB_TOKEN's value{how})"
            assert expected in found, (expected, found)
    assert "long.txt:1 (Slack token)" in found, found
    assert "blob.bin:1 (Slack token)" in found, found


SCAN_RSS = """
import sys
from pathlib import Path
from harness_cli.delivery import secret_scan
found = secret_scan.scan_branch(Path(sys.argv[1]), "harness/CASE-1", "main")
print([f.render() for f in found])
# VmHWM, not ru_maxrss: that one keeps the forking parent's peak across exec
hwm = [ln for ln in Path('/proc/self/status').read_text().splitlines() if ln.startswith('VmHWM')]
print(int(hwm[0].split()[1]) // 1024)
"""


@pytest.mark.slow
def test_a_huge_blob_is_scanned_in_bounded_memory(repo: Git, tmp_path: Path) -> None:
    """A 256 MB binary in the agent's commit (the token near its end) and a 4 MB line of text
    (a token in its middle): both found, and the scan's process stays far under the blob's
    size — before, every new object was read whole from ``cat-file --batch``."""
    import os
    import subprocess
    import sys

    big = repo.repo_dir / "model.bin"
    with big.open("wb") as out:
        for _ in range(256):
            out.write(b"\0" * (1 << 20))
        out.write(f"\0key={TOKEN}\0".encode())
    (repo.repo_dir / "dump.txt").write_bytes(b"y" * (2 << 20) + TOKEN.encode() + b"y" * (2 << 20))
    repo.add()
    repo.run("commit", "-q", "-m", "Add the model")
    env = {**os.environ, "GITLAB_TOKEN": TOKEN}
    proc = subprocess.run(
        [sys.executable, "-c", SCAN_RSS, str(repo.repo_dir)],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    said, peak_mb = proc.stdout.splitlines()[-2:]
    assert "model.bin:1 (GITLAB_TOKEN's value)" in said, said
    assert "dump.txt:1 (GITLAB_TOKEN's value)" in said, said
    assert "dump.txt:1 (GitLab token)" in said, said  # the shape, in the added line's pieces
    assert int(peak_mb) < 150, f"peak {peak_mb} MB for a {big.stat().st_size >> 20} MB blob"
