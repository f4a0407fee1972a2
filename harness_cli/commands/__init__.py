"""One thin module per subcommand: parse options, build services, call one core function,
render the result. ``harness_cli.cli`` imports a module only when its subcommand runs."""

from __future__ import annotations

from typing import Any

import typer


def new_app(help_text: str, **kwargs: Any) -> typer.Typer:
    """A subcommand's typer app, configured the same way everywhere."""
    return typer.Typer(
        help=help_text,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
        **kwargs,
    )
