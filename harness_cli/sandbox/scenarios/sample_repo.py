"""The seeded sample project: a tiny real Python package with one planted bug.

``pricing.discount.bulk_discount`` should give 10 % off from ten units on, but compares with
``>`` instead of ``>=``; two tests in ``tests/test_discount.py`` fail until that is fixed. The
sandbox's CI runs ``python -m pytest -q`` on every pushed sha, so a pipeline fails on the
planted bug and passes once :data:`SAMPLE_BUG_FIX` is applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness_cli.sandbox.gitlab_api import GitLabEmulator

__all__ = [
    "SAMPLE_BUG_FIX",
    "SAMPLE_CI_COMMAND",
    "SAMPLE_PROJECT_PATH",
    "SAMPLE_TICKET",
    "sample_project_files",
    "seed_sample_project",
]

SAMPLE_PROJECT_PATH = "acme/pricing-service"
SAMPLE_CI_COMMAND = "python -m pytest -q"
SAMPLE_TICKET = (
    "Bulk discount is not applied to orders of exactly 10 units. The README says 10 % off "
    "from 10 units on, but an order of 10 × 5.00 is charged 50.00 instead of 45.00."
)

_README = """# pricing-service

Order pricing for the shop.

* `pricing.discount.bulk_discount(unit_price, quantity)`: 10 % off an order line from
  **10 units on** (`BULK_THRESHOLD`), rounded half-up to the cent.
* `pricing.discount.line_total(unit_price, quantity)`: the line price after discount.

Run the tests with `python -m pytest -q`.
"""

_PYPROJECT = """[project]
name = "pricing"
version = "0.1.0"
requires-python = ">=3.9"

[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["."]
addopts = "-p no:cacheprovider"
"""

_BUGGY_LINE = "    if quantity > BULK_THRESHOLD:\n"
_FIXED_LINE = "    if quantity >= BULK_THRESHOLD:\n"

_DISCOUNT = f'''"""Discounts on order lines."""

from decimal import ROUND_HALF_UP, Decimal

BULK_THRESHOLD = 10
BULK_RATE = Decimal("0.10")
CENT = Decimal("0.01")


def bulk_discount(unit_price: Decimal, quantity: int) -> Decimal:
    """10 % off the line once it reaches BULK_THRESHOLD units, rounded half-up to the cent."""
    if quantity < 0:
        raise ValueError("quantity must not be negative")
    subtotal = unit_price * quantity
{_BUGGY_LINE}        return (subtotal * BULK_RATE).quantize(CENT, rounding=ROUND_HALF_UP)
    return Decimal("0.00")


def line_total(unit_price: Decimal, quantity: int) -> Decimal:
    """What the customer pays for the line."""
    subtotal = unit_price * quantity
    return (subtotal - bulk_discount(unit_price, quantity)).quantize(CENT)
'''

_TESTS = """from decimal import Decimal

import pytest

from pricing.discount import bulk_discount, line_total


def test_no_discount_below_threshold():
    assert bulk_discount(Decimal("5.00"), 9) == Decimal("0.00")


def test_discount_starts_at_threshold():
    assert bulk_discount(Decimal("5.00"), 10) == Decimal("5.00")


def test_line_total_at_threshold():
    assert line_total(Decimal("2.50"), 10) == Decimal("22.50")


def test_discount_rounds_half_up():
    assert bulk_discount(Decimal("1.99"), 12) == Decimal("2.39")


def test_negative_quantity_is_rejected():
    with pytest.raises(ValueError):
        bulk_discount(Decimal("1.00"), -1)
"""

SAMPLE_BUG_FIX: tuple[str, str, str] = ("pricing/discount.py", _BUGGY_LINE, _FIXED_LINE)
"""(path, old, new): replacing ``old`` with ``new`` in ``path`` fixes the planted bug."""


def sample_project_files() -> dict[str, str]:
    return {
        ".gitignore": "__pycache__/\n*.pyc\n.pytest_cache/\n",
        "README.md": _README,
        "pyproject.toml": _PYPROJECT,
        "pricing/__init__.py": '"""Order pricing."""\n',
        "pricing/discount.py": _DISCOUNT,
        "tests/test_discount.py": _TESTS,
    }


def seed_sample_project(
    emulator: GitLabEmulator, path: str = SAMPLE_PROJECT_PATH, **options: Any
) -> dict[str, Any]:
    """Create the sample project in ``emulator``; returns the ``create_project`` result."""
    body = {
        "path": path,
        "files": sample_project_files(),
        "ci_command": SAMPLE_CI_COMMAND,
        **options,
    }
    result: dict[str, Any] = emulator.control("create_project", body)
    return result
