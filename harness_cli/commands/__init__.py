"""One thin module per subcommand: parse options, build services, call one core function,
render the result. ``harness_cli.cli`` imports a module only when its subcommand runs."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup


def _plain_flags(params: Any) -> Any:
    """Boolean flags show as plain ``--flag`` in ``--help``: typer would print a ``<bool>``
    metavar after them, as if they took a value."""
    for param in params:
        if getattr(param, "is_flag", False):  # typer vendors click: no isinstance here
            param.metavar = ""
    return params


class _Command(TyperCommand):
    def get_params(self, ctx: Any) -> Any:
        return _plain_flags(super().get_params(ctx))


class _Group(TyperGroup):
    def get_params(self, ctx: Any) -> Any:
        return _plain_flags(super().get_params(ctx))


class _Typer(typer.Typer):
    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", _Command)
        return super().command(*args, **kwargs)


def new_app(help_text: str, **kwargs: Any) -> typer.Typer:
    """A subcommand's typer app, configured the same way everywhere."""
    kwargs.setdefault("cls", _Group)
    return _Typer(
        help=help_text,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
        **kwargs,
    )
