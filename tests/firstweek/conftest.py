"""The operator's desk (tests/delivery) and the memory desk (tests/memory) for the first-week
tests of issue #34. Both share one model emulator per session (each test loads its script)."""

from tests.delivery.conftest import desk, model, model_server, origin  # noqa: F401
from tests.memory.conftest import mem  # noqa: F401
