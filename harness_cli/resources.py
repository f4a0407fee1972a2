"""What ships inside the package, and how the operator's files override it, file by file.

``harness_cli/defaults/`` holds the prompt templates, the SOPs every config needs (STYLE.md,
INVESTIGATION.md), the example config (the sandbox's: ``agent-config/`` and ``sops/``) and the
schedule's files (``cron/``). A pip-installed harness has no checkout, so nothing here may
be looked up relative to the current directory or to a source tree.

Layering: a template or SOP the operator has (``<config>/prompts/NAME.md``,
``<sops_dir>/STYLE.md``) is used as it is; one the operator lacks falls back to the packaged
copy. ``harness doctor`` lists which ones are overridden.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULTS = Path(__file__).resolve().parent / "defaults"

PACKAGED_SOPS = ("STYLE.md", "INVESTIGATION.md")
"""The SOPs every config reads, shipped with the package. Per-project SOPs and knowledge bases
are the operator's own (``init`` writes a starter for each project)."""


def example_config() -> Path:
    """The example ``agent-config/``: the sandbox's operator, channel and project."""
    return DEFAULTS / "agent-config"


def example_sops() -> Path:
    """The example config's ``sops/`` (its ``sops_dir`` is ``../sops``)."""
    return DEFAULTS / "sops"


def packaged_prompts() -> Path:
    return example_config() / "prompts"


def cron_dir() -> Path:
    """The crontab template, the ``harness-cron`` wrapper, the systemd units, the hooks."""
    return DEFAULTS / "cron"


@dataclass(frozen=True)
class Resolved:
    """Where one template or SOP comes from."""

    name: str
    path: Path
    overridden: bool
    """True when the operator's file is used instead of the packaged one (or there is no
    packaged one)."""


def template_names() -> list[str]:
    """The packaged prompt templates, by name (``investigator`` for ``investigator.md``)."""
    return sorted(p.stem for p in packaged_prompts().glob("*.md") if p.name != "README.md")


def template(config_dir: Path, name: str) -> Resolved | None:
    """``<config_dir>/prompts/<name>.md`` if the operator has it, else the packaged one."""
    return _layered(config_dir / "prompts", packaged_prompts(), f"{name}.md", name)


def sop(sops_dir: Path, name: str) -> Resolved | None:
    """``<sops_dir>/<name>`` if the operator has it, else the packaged STYLE.md/INVESTIGATION.md."""
    return _layered(sops_dir, example_sops(), name, name)


def _layered(own: Path, packaged: Path, filename: str, name: str) -> Resolved | None:
    mine, shipped = own / filename, packaged / filename
    if mine.is_file():
        same = shipped.is_file() and mine.resolve() == shipped.resolve()
        return Resolved(name, mine, overridden=not same)
    if shipped.is_file():
        return Resolved(name, shipped, overridden=False)
    return None
