"""Nothing leaves with a push that should not (#21 p2): before any push, what the push really
sends is scanned for every secret value the harness knows and for token-shaped strings.

What is really pushed (#28 R5: ``git diff -U0`` without ``--text`` missed binary files, files
marked ``-diff`` in ``.gitattributes``, commit messages and encodings): every object the remote
does not have yet — each blob read whole with ``git cat-file`` (binary or not, attributes never
consulted), each commit (its message and its author lines), each file name — and the MR's
title and description (:func:`scan_text`, from ``delivery.mr``). The harness's own secret values
(``redaction.secret_sources``: the env file and its credentials) are looked for as written, in
their common encodings (base64, hex, URL-encoded: ``redaction.encoded_forms``) and split across
lines or string literals. Token shapes (ours, and detect-secrets' format plugins) are looked
for in the lines the new commits add (``git log -p --text``, no textconv, no external diff):
a shape already in the file before the change is not this change's.

A hit refuses the push. What is reported is the file and the line, never the value: the
operator gets one DM that says where to look, and the branch stays local.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness_cli import redaction
from harness_cli.delivery import secret_shapes
from harness_cli.errors import ServiceError
from harness_cli.logs import event
from harness_cli.services.git import Git

log = logging.getLogger("harness.delivery.secret_scan")

SPLIT_CHARS = b" \t\r\n\"'`\\+,()"
"""What line wrapping and string concatenation put between the parts of a split value
(``"glpat-abc" +\\n "def"``): removed from both the text and the value before a second look."""
BINARY_PROBE = 8000
"""A blob with a NUL byte in its first 8,000 bytes is binary (git's own rule)."""
_PRINTABLE = re.compile(rb"[\x20-\x7e]{8,}")


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    kind: str
    """What matched (``GITLAB_TOKEN's value``, ``Slack Token``…): never the text itself."""

    def render(self) -> str:
        return f"{self.path}:{self.line} ({self.kind})"


@dataclass(frozen=True)
class _Secret:
    """One secret value of the harness's, in every form it is looked for."""

    name: str
    plain: tuple[bytes, ...]
    """As written, then its encodings: searched in the bytes as they are."""
    squeezed: tuple[bytes, ...]
    """The same without :data:`SPLIT_CHARS`: searched in the bytes without them."""

    def find(self, data: bytes, squeezed: bytes | None) -> tuple[int, str] | None:
        """(line, kind) of the first place ``data`` holds this secret, or None."""
        for n, form in enumerate(self.plain):
            at = data.find(form)
            if at >= 0:
                how = "" if n == 0 else ", encoded"
                return data.count(b"\n", 0, at) + 1, f"{self.name}'s value{how}"
        if squeezed is None:
            return None
        for form in self.squeezed:
            at = squeezed.find(form)
            if at >= 0:
                return _line_of_squeezed(data, at), f"{self.name}'s value, split"
        return None


def own_secrets() -> list[_Secret]:
    """The harness's secret values (the env file, its credentials) and their forms."""
    found: list[_Secret] = []
    for value, name in redaction.secret_sources().items():
        forms = [value, *redaction.encoded_forms(value)]
        plain = tuple(f.encode("utf-8") for f in forms)
        squeezed = {f.translate(None, SPLIT_CHARS) for f in plain}
        keep = tuple(s for s in squeezed if len(s) >= redaction.MIN_SECRET_LENGTH)
        found.append(_Secret(name, plain, keep))
    return found


def _squeeze(data: bytes) -> bytes:
    return data.translate(None, SPLIT_CHARS)


def _line_of_squeezed(data: bytes, at: int) -> int:
    """The line of ``data`` holding the ``at``-th byte of its squeezed form."""
    seen = 0
    for number, line in enumerate(data.split(b"\n"), 1):
        seen += len(_squeeze(line))
        if seen > at:
            return number
    return data.count(b"\n") + 1


def scan_bytes(where: str, data: bytes, secrets: list[_Secret]) -> list[Finding]:
    """The harness's own secrets anywhere in ``data`` (one finding per secret)."""
    squeezed = _squeeze(data)
    found = (s.find(data, squeezed) for s in secrets)
    return [Finding(where, line, kind) for line, kind in filter(None, found)]


def scan_lines(lines: list[tuple[str, int, str]]) -> list[Finding]:
    """Token shapes in ``(where, line number, text)`` lines (:mod:`secret_shapes`)."""
    return [Finding(*hit) for hit in secret_shapes.scan_lines(lines)]


def scan_text(where: str, text: str) -> list[Finding]:
    """Everything :func:`scan_push` looks for, in one text the harness sends (an MR title or
    description): the harness's secrets in any form, and token shapes on every line."""
    findings = scan_bytes(where, text.encode("utf-8"), own_secrets())
    return findings + scan_lines([(where, n, ln) for n, ln in enumerate(text.splitlines(), 1)])


# -- what a push sends ------------------------------------------------------------------------
def scan_push(git: Git, head: str, remote_has: Iterable[str]) -> list[Finding]:
    """Every object reachable from ``head`` that none of ``remote_has`` (commits the remote
    is known to hold; missing ones are ignored) reaches: blobs whole, commits whole, paths,
    and the lines the new commits add."""
    exclude = [f"^{sha}" for sha in dict.fromkeys(remote_has) if sha]
    listed = git.run("rev-list", "--objects", "--ignore-missing", head, *exclude)
    paths: dict[str, str] = {}
    for row in listed.splitlines():
        sha, _, path = row.partition(" ")
        paths.setdefault(sha, path)
    secrets = own_secrets()
    findings: list[Finding] = []
    lines: list[tuple[str, int, str]] = []
    binaries: list[str] = []
    for sha, kind, data in _objects(git, list(paths)):
        if kind == "blob":
            findings += scan_bytes(paths[sha] or sha, data, secrets)
            if b"\0" in data[:BINARY_PROBE] and paths[sha]:
                binaries.append(paths[sha])
                lines += _printable_runs(paths[sha], data)
        elif kind == "commit":
            where = f"commit {sha[:10]}"
            findings += scan_bytes(where, data, secrets)
            message = data.split(b"\n\n", 1)[-1].decode("utf-8", "replace")
            lines += [(where, n, line) for n, line in enumerate(message.splitlines(), 1)]
    names = "\n".join(p for p in paths.values() if p).encode("utf-8")
    findings += [Finding("(a file name)", 0, f.kind) for f in scan_bytes("", names, secrets)]
    findings += scan_lines([*lines, *_added_lines(git, head, exclude, binaries)])
    return list(dict.fromkeys(findings))


def _printable_runs(path: str, data: bytes) -> list[tuple[str, int, str]]:
    """The text inside a binary file (``strings``): where a token shape could be."""
    found: list[tuple[str, int, str]] = []
    line, seen = 1, 0
    for match in _PRINTABLE.finditer(data):
        line += data.count(b"\n", seen, match.start())
        seen = match.start()
        found.append((path, line, match.group().decode("ascii")))
    return found


def _objects(git: Git, shas: list[str]) -> Iterable[tuple[str, str, bytes]]:
    """(sha, type, content) of each object, read in one ``git cat-file --batch``."""
    if not shas:
        return
    out = git.run_bytes("cat-file", "--batch", stdin=("\n".join(shas) + "\n").encode())
    at = 0
    while at < len(out):
        end = out.index(b"\n", at)
        header = out[at:end].decode("ascii", "replace").split()
        if len(header) != 3:  # "<sha> missing": nothing to read, nothing it could leak
            at = end + 1
            continue
        size = int(header[2])
        yield header[0], header[1], out[end + 1 : end + 1 + size]
        at = end + 1 + size + 1


def _added_lines(
    git: Git, head: str, exclude: list[str], binaries: list[str]
) -> list[tuple[str, int, str]]:
    """(path, line number, text) of every line the new commits add, each commit against its
    first parent, every file read as text whatever .gitattributes says — but the binary files,
    whose text :func:`_printable_runs` gave already (their "lines" are noise)."""
    skip = [f":(exclude,literal){path}" for path in dict.fromkeys(binaries)]
    out = git.run(
        "log", "-p", "-U0", "--text", "--no-textconv", "--no-ext-diff", "--no-renames",
        "--no-color", "--diff-merges=first-parent", "--format=", "--ignore-missing", head,
        *exclude, "--", ".", *skip,
    )  # fmt: skip
    found: list[tuple[str, int, str]] = []
    path, number = "", 0
    for line in out.splitlines():
        if line.startswith("+++ "):
            path = line[4:].removeprefix("b/")
        elif line.startswith("@@"):
            match = re.search(r"\+(\d+)", line)
            number = int(match.group(1)) if match else 0
        elif line.startswith("+"):
            found.append((path, number, line[1:]))
            number += 1
    return found


def scan_branch(
    worktree: Path, branch: str, base_branch: str, *, base_sha: str = ""
) -> list[Finding]:
    """What a push of ``branch`` would send: the objects none of the remote's own heads reaches
    (asked of the remote itself: a remote-tracking ref is a file the agent's box may write),
    nor ``base_sha`` (where the harness made the worktree from the remote)."""
    git = Git(worktree)
    head = git.head_sha(f"refs/heads/{branch}")
    if head is None:
        return []
    try:
        remote_has = [*_remote_heads(git), base_sha]
        findings = scan_push(git, head, remote_has)
    except ServiceError as exc:  # fail closed: what cannot be scanned does not leave
        return [Finding("(the push)", 0, f"could not be scanned: {exc.message}")]
    if findings:
        event(
            log,
            "secret_scan_hit",
            logging.WARNING,
            branch=branch,
            where=[f.render() for f in findings],
        )
    return findings


def _remote_heads(git: Git) -> list[str]:
    """The commits the remote's branches point at; none when it cannot be asked (then only
    ``base_sha`` counts as known, and the scan reads more: never less)."""
    try:
        return list(git.remote_heads("origin").values())
    except ServiceError:
        return []


def refusal_text(case_id: str, branch: str, findings: list[Finding]) -> str:
    shown = findings[:20]
    more = f"\n…and {len(findings) - len(shown)} more" if len(findings) > len(shown) else ""
    return (
        f":no_entry: Push refused — case {case_id}: the new commits on `{branch}` carry what "
        "looks like a secret, so nothing was pushed and the MR stays (or goes back to) a draft. "
        "Where:\n"
        + "\n".join(f"• `{f.render()}`" for f in shown)
        + more
        + "\nRemove it from the branch's history (and rotate it if it is real), then run the "
        "dev-agent again."
    )
