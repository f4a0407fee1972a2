"""The obligations tests reuse the investigation tests' harness (a case, the real runtime, the
scripted model in the Anthropic emulator)."""

from tests.investigation.conftest import inv, model_server, runtime

__all__ = ["inv", "model_server", "runtime"]
