"""The operator's desk (tests/delivery) for the first-week tests of issue #34."""

from tests.delivery.conftest import desk, model, model_server, origin  # noqa: F401
