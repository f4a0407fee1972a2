"""harness — a production harness that turns a coding model into an engineering teammate."""

__version__ = "0.1.0"
