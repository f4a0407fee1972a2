"""An unexpected error is a bug: write a crash log with versions to ``$HARNESS_HOME/logs/`` and
tell the operator where it is, in one line."""

from __future__ import annotations

import platform
import sys
import traceback
from importlib import metadata

from harness_cli import __version__, clock, paths
from harness_cli.errors import EXIT_FAILED
from harness_cli.logs import redact


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def report(exc: BaseException, *, argv: list[str], verbose: bool) -> int:
    lines = [
        "### harness crash",
        f"when: {clock.stamp()}",
        f"argv: {' '.join(argv)}",
        f"harness: {__version__}",
        f"python: {sys.version.split()[0]} ({platform.platform()})",
        *(
            f"{d}: {_version(d)}"
            for d in ("typer", "pydantic", "slack-sdk", "python-gitlab", "anthropic", "PyGithub")
        ),
        "",
        "```",
        *traceback.format_exception(exc),
        "```",
    ]
    text = redact("\n".join(line.rstrip("\n") for line in lines)) + "\n"
    where = paths.logs_dir() / f"crash-{clock.stamp()}.log"
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_text(text, encoding="utf-8")
        place = str(where)
    except OSError:
        place = "(could not write the crash log; traceback below)"
        verbose = True
    if verbose:
        sys.stderr.write(text)
    sys.stderr.write(
        f"harness: unexpected error {type(exc).__name__}: {redact(str(exc))} — this is a bug; "
        f"details in {place}\n"
    )
    return EXIT_FAILED
