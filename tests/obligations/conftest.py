"""The obligations tests reuse the investigation tests' harness (a case, the real runtime, the
scripted model in the Anthropic emulator), and the delivery tests' operator desk."""

from tests.delivery.conftest import desk
from tests.investigation.conftest import inv, model_server, runtime

__all__ = ["desk", "inv", "model_server", "runtime"]
