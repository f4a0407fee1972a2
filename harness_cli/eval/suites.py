"""Where eval cases come from: a suite is a folder of case files — a shipped one by name
(``investigation``, ``delivery``: ``harness_cli/defaults/evals/<name>/``) or any folder or
single ``.yaml`` file given by path (an exported case, a suite of one's own)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from harness_cli.errors import ConfigError, HarnessError, InputError
from harness_cli.eval.cases import EVALS_DIR, LibraryCase
from harness_cli.sandbox.anthropic_forward import Upstream
from harness_cli.sandbox.model_script import load_script

if TYPE_CHECKING:
    from harness_cli.sandbox.anthropic_forward import Upstream


def shipped() -> list[str]:
    return sorted(p.name for p in EVALS_DIR.iterdir() if p.is_dir())


def resolve(name: str) -> tuple[str, list[Path]]:
    """A suite's name and its case files, as absolute paths: the trials run in workers whose
    working directory is their scratch, where a relative path names nothing."""
    path = Path(name).expanduser().absolute()
    if not Path(name).expanduser().exists() and (EVALS_DIR / name).is_dir():
        path = EVALS_DIR / name
    if path.is_file():
        return path.stem, [path]
    if path.is_dir():
        files = sorted(path.glob("*.yaml"))
        if not files:
            raise InputError(f"eval suite {path} holds no .yaml case")
        return path.name, files
    raise InputError(
        f"no eval suite {name!r}",
        hint=f"shipped suites: {', '.join(shipped())}; or give a folder or a case file",
    )


_M = TypeVar("_M", bound=BaseModel)


def load_named(
    path: Path, model: type[_M], what: str, unreadable: type[HarnessError] = ConfigError
) -> _M:
    """A YAML file of ``model`` whose ``id`` is its file's name; a bad file is one line that
    names it (``unreadable`` when it cannot be read at all, a ConfigError otherwise)."""
    try:
        found = model.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise unreadable(f"{what} {path} cannot be read: {exc.strerror}") from None
    except (yaml.YAMLError, ValidationError) as exc:
        first = " ".join(str(exc).splitlines()[0:3])
        raise ConfigError(f"{what} {path}: {first}") from None
    if getattr(found, "id", None) != path.stem:
        raise ConfigError(
            f"{what} {path}: id {getattr(found, 'id', None)!r} must match the file name"
        )
    return found


def load_case_file(path: str | Path) -> LibraryCase:
    """One case file, checked (format and model script); a bad file is one ConfigError."""

    path = Path(path)
    case = load_named(path, LibraryCase, "eval case", unreadable=InputError)
    if not case.live:
        load_script(case.model_source(), case.variables or None)
    return case


LIVE_DEFAULT_URL = "https://api.anthropic.com"
"""The endpoint of a live case when the environment sets no ANTHROPIC_BASE_URL."""


def live_model_env(case: LibraryCase) -> dict[str, str]:
    """The real API's key and endpoint for a case with a live role, from the environment
    ``harness eval`` runs in; such a case without a key is refused before any trial starts
    (InputError)."""
    key = os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        which = ("script: live" if case.live else
                 "models: " + ", ".join(f"{r}: live" for r in sorted(case.live_roles)))  # fmt: skip
        raise InputError(
            f"eval case {case.id} plays a role live ({which}) and ANTHROPIC_API_KEY is not set",
            hint="export the API key to run it against the real API, or leave the case out",
        )
    base = os.environ.get("ANTHROPIC_BASE_URL") or LIVE_DEFAULT_URL
    return {"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": base}


def live_upstream(case: LibraryCase) -> Upstream | None:
    """Where the emulator sends the requests of a case's live roles (``models:``); None when
    the script plays every role."""
    if not case.live_roles:
        return None

    env = live_model_env(case)
    return Upstream(env["ANTHROPIC_BASE_URL"], env["ANTHROPIC_API_KEY"], case.live_roles)
