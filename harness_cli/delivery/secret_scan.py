"""Nothing leaves with a push that should not (#21 p2): before any push, what the push really
sends is scanned for every secret value the harness knows and for token-shaped strings.

What is really pushed (#28 R5: ``git diff -U0`` without ``--text`` missed binary files, files
marked ``-diff`` in ``.gitattributes``, commit messages and encodings): every object the remote
does not have yet — each blob with ``git cat-file`` (binary or not, attributes never
consulted), each commit (its message and its author lines), each file name — and the MR's
title and description (:func:`scan_text`, from ``delivery.mr``). The harness's own secret values
(``redaction.secret_sources``: the env file and its credentials) are looked for as written, in
their common encodings (base64, hex, URL-encoded: ``redaction.encoded_forms``) and split across
lines or string literals. Token shapes (ours, and detect-secrets' format plugins) are looked
for in the lines the new commits add (``git log -p --text``, no textconv, no external diff):
a shape already in the file before the change is not this change's.

Everything is streamed, never read whole (an agent's commit may hold a 2 GB file): objects
and diffs in chunks of :data:`CHUNK` bytes, each searched with the end of the one before it
(:class:`_Search`: a value cut by a chunk's edge is still found), lines in pieces of at most
:data:`LINE_PIECE` characters that overlap by :data:`PIECE_OVERLAP`, token shapes looked for a
batch of lines at a time (:data:`BATCH_CHARS`). What the scan holds is bounded by these, not by
the size of what is pushed.

A hit refuses the push. What is reported is the file and the line, never the value: the
operator gets one DM that says where to look, and the branch stays local.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

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
CHUNK = 1 << 20
"""Bytes of an object or a diff read (and searched) at a time."""
LINE_PIECE = 1 << 16
"""The longest piece of one line looked at for token shapes at once; a longer line is cut
into pieces that overlap by :data:`PIECE_OVERLAP` (token shapes are far shorter)."""
PIECE_OVERLAP = 1 << 10
BATCH_CHARS = 4 << 20
"""Lines collected before their token shapes are looked for (one regex pass per batch)."""
_SPLIT = frozenset(SPLIT_CHARS)
_PRINTABLE_BYTES = bytes(range(0x20, 0x7F))


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
class _Search:
    """The harness's own secrets in one stream of bytes fed in chunks, without holding it:
    each chunk is searched together with the last bytes of the stream before it (one byte
    less than the longest form, as written and squeezed), so a value across two chunks is
    found; each secret's first place is kept (as written before encoded before split)."""

    def __init__(self, secrets: list[_Secret]) -> None:
        self.secrets = secrets
        self.keep = max((len(f) for s in secrets for f in s.plain), default=1) - 1
        self.keep_squeezed = max((len(f) for s in secrets for f in s.squeezed), default=1) - 1
        self.tail, self.tail_line = b"", 1  # the stream's last bytes; the line they start on
        self.squeezed_tail, self.squeezed_lines = b"", list[int]()  # and each byte's line
        self.line = 1  # the line the next chunk starts on
        self.plain: dict[int, tuple[int, str]] = {}
        self.split: dict[int, tuple[int, str]] = {}

    def feed(self, chunk: bytes) -> None:
        window = self.tail + chunk
        for i, secret in enumerate(self.secrets):
            for n, form in enumerate(secret.plain if i not in self.plain else ()):
                at = window.find(form)
                if at >= 0:
                    how = "" if n == 0 else ", encoded"
                    line = self.tail_line + window.count(b"\n", 0, at)
                    self.plain[i] = (line, f"{secret.name}'s value{how}")
                    break
        squeezed_chunk = _squeeze(chunk)
        squeezed = self.squeezed_tail + squeezed_chunk
        for i, secret in enumerate(self.secrets):
            for form in secret.squeezed if i not in self.plain and i not in self.split else ():
                at = squeezed.find(form)
                if at >= 0:
                    inside = at - len(self.squeezed_tail)
                    line = (self.squeezed_lines[at] if inside < 0
                            else self.line - 1 + _line_of_squeezed(chunk, inside))  # fmt: skip
                    self.split[i] = (line, f"{secret.name}'s value, split")
                    break
        cut = max(0, len(window) - self.keep)
        self.tail_line += window.count(b"\n", 0, cut)
        self.tail = window[cut:]
        self._keep_squeezed(chunk, squeezed_chunk)
        self.line += chunk.count(b"\n")

    def _keep_squeezed(self, chunk: bytes, squeezed: bytes) -> None:
        """The squeezed stream's last bytes and the line of each, walked back from the chunk's
        end (at most :data:`LINE_PIECE` bytes of it: past a longer run of split characters
        the line is the one reached there)."""
        take = squeezed[len(squeezed) - self.keep_squeezed :] if self.keep_squeezed else b""
        lines: list[int] = []
        line, at = self.line + chunk.count(b"\n"), len(chunk) - 1
        stop = max(-1, at - LINE_PIECE)
        while len(lines) < len(take) and at > stop:
            if chunk[at] == 0x0A:
                line -= 1
            elif chunk[at] not in _SPLIT:
                lines.append(line)
            at -= 1
        lines += [line] * (len(take) - len(lines))
        lines.reverse()
        tail, lines = self.squeezed_tail + take, self.squeezed_lines + lines
        start = max(0, len(tail) - self.keep_squeezed)
        self.squeezed_tail, self.squeezed_lines = tail[start:], lines[start:]

    def findings(self, where: str) -> list[Finding]:
        hits = [self.plain.get(i) or self.split.get(i) for i in range(len(self.secrets))]
        return [Finding(where, line, kind) for line, kind in filter(None, hits)]


@dataclass
class _Shapes:
    """Token shapes in lines given one at a time, looked for a batch at a time."""

    batch: list[tuple[str, int, str]] = field(default_factory=list)
    size: int = 0
    found: list[Finding] = field(default_factory=list)

    def add(self, where: str, line: int, text: str) -> None:
        self.batch.append((where, line, text))
        self.size += len(text) + 1
        if self.size >= BATCH_CHARS:
            self.flush()

    def flush(self) -> None:
        if self.batch:
            self.found += scan_lines(self.batch)
            # the last line goes again with the next batch: a shape across two lines is found
            self.batch, self.size = self.batch[-1:], len(self.batch[-1][2]) + 1


def _pieces(chunks: Iterable[bytes]) -> Iterator[tuple[bytes, bool]]:
    """The lines of a stream of chunks (without their newline), each in pieces of at most
    :data:`LINE_PIECE` bytes, a piece after the first starting with the last
    :data:`PIECE_OVERLAP` bytes of the one before; True with a line's first piece."""
    rest, first = b"", True
    for chunk in chunks:
        data, at = rest + chunk, 0
        while True:
            end = data.find(b"\n", at)
            if end >= 0 and end - at <= LINE_PIECE:
                yield data[at:end], first
                at, first = end + 1, True
            elif len(data) - at > LINE_PIECE:
                yield data[at : at + LINE_PIECE], first
                at, first = at + LINE_PIECE - PIECE_OVERLAP, False
            else:
                break
        rest = data[at:]
    if rest or not first:
        yield rest, first


def _chunks(pipe: IO[bytes], size: int | None = None) -> Iterator[bytes]:
    """``size`` bytes of ``pipe`` (to its end when None), :data:`CHUNK` at a time."""
    while size is None or size > 0:
        chunk = pipe.read(CHUNK if size is None else min(CHUNK, size))
        if not chunk:
            if size:
                raise ServiceError(f"git cat-file ended {size} bytes early")
            return
        if size is not None:
            size -= len(chunk)
        yield chunk


def scan_push(git: Git, head: str, remote_has: Iterable[str]) -> list[Finding]:
    """Every object reachable from ``head`` that none of ``remote_has`` (commits the remote
    is known to hold; missing ones are ignored) reaches: blobs and commits streamed whole,
    paths, and the lines the new commits add."""
    exclude = [f"^{sha}" for sha in dict.fromkeys(remote_has) if sha]
    paths: dict[str, str] = {}
    with git.reading("rev-list", "--objects", "--ignore-missing", head, *exclude) as pipe:
        for row, _ in _pieces(_chunks(pipe)):  # (a path longer than a piece: its start)
            sha, _, path = row.decode("utf-8", "replace").partition(" ")
            paths.setdefault(sha, path)
    paths.pop("", None)
    secrets = own_secrets()
    findings: list[Finding] = []
    shapes = _Shapes()
    binaries: list[str] = []
    for sha, kind, chunks in _objects(git, list(paths)):
        if kind == "blob":
            where = paths[sha] or sha
            search, binary, runs = _Search(secrets), None, _Runs(where, shapes)
            for chunk in chunks:
                if binary is None:
                    binary = b"\0" in chunk[:BINARY_PROBE] and bool(paths[sha])
                search.feed(chunk)
                if binary:
                    runs.feed(chunk)
            runs.close()
            findings += search.findings(where)
            if binary:
                binaries.append(paths[sha])
        elif kind == "commit":
            where = f"commit {sha[:10]}"
            search = _Search(secrets)
            message, number = False, 0
            for piece, first in _pieces(_fed(chunks, search)):
                if message:
                    number += first
                    shapes.add(where, number, piece.decode("utf-8", "replace"))
                message = message or (first and not piece)  # the headers end at a blank line
            findings += search.findings(where)
        else:
            for _ in chunks:  # trees and tags: their names are the paths, scanned below
                pass
    names = "\n".join(p for p in paths.values() if p).encode("utf-8")
    findings += [Finding("(a file name)", 0, f.kind) for f in scan_bytes("", names, secrets)]
    _added_lines(git, head, exclude, binaries, shapes)
    shapes.flush()
    return list(dict.fromkeys(findings + shapes.found))


def _fed(chunks: Iterable[bytes], search: _Search) -> Iterator[bytes]:
    for chunk in chunks:
        search.feed(chunk)
        yield chunk


class _Runs:
    """The text inside a binary file (``strings``: runs of 8 printable bytes or more), given in
    chunks: where a token shape could be. A run across two chunks is one run; a run longer
    than :data:`LINE_PIECE` is cut into pieces that overlap (:func:`_pieces`' rule)."""

    def __init__(self, where: str, shapes: _Shapes) -> None:
        self.where, self.shapes = where, shapes
        self.line = 1  # the line the next chunk starts on
        self.run, self.run_line = b"", 1  # a run that reached the last chunk's end

    def feed(self, chunk: bytes) -> None:
        at = 0
        if self.run:
            at = len(chunk) - len(chunk.lstrip(_PRINTABLE_BYTES))
            self._extend(chunk[:at])
            if at == len(chunk):
                return  # (no newline in it: a newline is not printable)
            self._end()
        line, seen = self.line, 0
        trailing = max(at, len(chunk.rstrip(_PRINTABLE_BYTES)))  # where the last run starts
        for match in _PRINTABLE.finditer(chunk, at, trailing):
            line += chunk.count(b"\n", seen, match.start())
            seen = match.start()
            self.run, self.run_line = b"", line
            self._extend(match.group())
            self._end()
        if trailing < len(chunk):
            self.run, self.run_line = b"", line + chunk.count(b"\n", seen, trailing)
            self._extend(chunk[trailing:])
        self.line += chunk.count(b"\n")

    def _extend(self, more: bytes) -> None:
        self.run += more
        while len(self.run) > LINE_PIECE:
            self.shapes.add(self.where, self.run_line, self.run[:LINE_PIECE].decode("ascii"))
            self.run = self.run[LINE_PIECE - PIECE_OVERLAP :]

    def _end(self) -> None:
        if len(self.run) >= 8:
            self.shapes.add(self.where, self.run_line, self.run.decode("ascii"))
        self.run = b""

    close = _end


def _objects(git: Git, shas: list[str]) -> Iterator[tuple[str, str, Iterator[bytes]]]:
    """(sha, type, its content in chunks) of each object, from one ``git cat-file --batch``;
    each object's chunks are to be read before the next object is asked for."""
    if not shas:
        return
    with git.reading("cat-file", "--batch", stdin=("\n".join(shas) + "\n").encode()) as pipe:
        while header := pipe.readline(256):
            fields = header.decode("ascii", "replace").split()
            if len(fields) != 3:  # "<sha> missing": nothing to read, nothing it could leak
                continue
            chunks = _chunks(pipe, int(fields[2]))
            yield fields[0], fields[1], chunks
            for _ in chunks:  # what the caller left unread
                pass
            pipe.read(1)  # the newline after each object


def _added_lines(
    git: Git, head: str, exclude: list[str], binaries: list[str], shapes: _Shapes
) -> None:
    """Every line the new commits add, to ``shapes`` as (path, line number, text): each commit
    against its first parent, every file read as text whatever .gitattributes says — but the
    binary files, whose text :class:`_Runs` gave already (their "lines" are noise)."""
    skip = [f":(exclude,literal){path}" for path in dict.fromkeys(binaries)]
    args = (
        "log", "-p", "-U0", "--text", "--no-textconv", "--no-ext-diff", "--no-renames",
        "--no-color", "--diff-merges=first-parent", "--format=", "--ignore-missing", head,
        *exclude, "--", ".", *skip,
    )  # fmt: skip
    path, number, added = "", 0, False
    with git.reading(*args) as pipe:
        for raw, first in _pieces(_chunks(pipe)):
            if not first:  # the rest of a long line
                if added:
                    shapes.add(path, number - 1, raw.decode("utf-8", "replace"))
                continue
            line = raw.decode("utf-8", "replace")
            added = False
            if line.startswith("+++ "):
                path = line[4:].removeprefix("b/")
            elif line.startswith("@@"):
                match = re.search(r"\+(\d+)", line)
                number = int(match.group(1)) if match else 0
            elif line.startswith("+"):
                shapes.add(path, number, line[1:])
                number, added = number + 1, True


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
