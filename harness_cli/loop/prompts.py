"""Prompt templates live in ``agent-config/prompts/<name>.md`` (operators and the
self-improvement loop edit them), falling back to the packaged template of that name
(``harness_cli.resources``); this module only fills them in. ``$name`` placeholders, so JSON
examples in a template need no escaping."""

from __future__ import annotations

import logging
from pathlib import Path
from string import Template

from harness_cli import resources
from harness_cli.config import Config
from harness_cli.errors import ConfigError
from harness_cli.logs import event

log = logging.getLogger("harness.prompts")


def render(cfg: Config, name: str, **values: str) -> str:
    found = resources.template(cfg.dir, name)
    path = found.path if found else cfg.dir / "prompts" / f"{name}.md"
    try:
        template = Template(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"prompt template {path} not found",
            hint=f"the package ships no template {name!r}: add {path}",
        ) from None
    try:
        return template.substitute(values).strip() + "\n"
    except (KeyError, ValueError) as exc:
        raise ConfigError(
            f"{path}: unknown or malformed placeholder {exc}",
            hint="placeholders are $name; write $$ for a literal dollar",
        ) from None


def sops_dir(cfg: Config) -> Path:
    return (cfg.dir / cfg.harness.sops_dir).resolve()


def project_text(cfg: Config, project: str, which: str) -> str:
    """The project's SOP or knowledge base (``which`` = "sop" | "kb"); a missing file is a
    warning and an explicit note in the prompt, never a crash."""
    rel = str(getattr(cfg.projects.projects[project], which))
    path = sops_dir(cfg) / rel
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        event(log, "project_file_missing", logging.WARNING, project=project, path=str(path))
        return f"(no {which.upper()} file at {path})"


def generic_sop(cfg: Config) -> str:
    found = resources.sop(sops_dir(cfg), "INVESTIGATION.md")  # the operator's, else packaged
    return found.path.read_text(encoding="utf-8") if found else ""
