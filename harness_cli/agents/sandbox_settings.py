"""harness.yaml ``sandbox:`` and ``sandbox.limits:``, alone: config reads them without
importing the box that applies them (``agents/sandbox.py``, ``agents/limits.py``), which sit on
the kernel floor above config (#29: config imports only leaf settings modules)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class LimitSettings(BaseModel):
    """harness.yaml ``sandbox.limits:`` — the bounds of every agent command, every acceptance
    check and (claude-code) the CLI's whole process tree. ``null`` turns one off. How they are
    applied: ``agents/limits.py``."""

    model_config = ConfigDict(extra="forbid")

    pids: int | None = Field(256, ge=16)
    """Processes and threads at once in one command's tree (a cgroup's pids.max; inside the
    harness's own box also RLIMIT_NPROC). A test suite with a few workers needs a few dozen."""
    memory_mb: int | None = Field(1024, ge=64)
    """Memory of one command's whole tree (the cgroup's limit, swap included) and of each
    process in it (RLIMIT_DATA). On claude-code the CLI's own share (``limits.CLI_SHARE_MB``)
    comes on top for its tree."""
    cpu_seconds: int | None = Field(600, ge=1)
    """CPU time of each process (RLIMIT_CPU); the wall clock is the tool's or check's timeout."""
    file_size_mb: int | None = Field(1024, ge=1)
    """The largest file a process may write (RLIMIT_FSIZE)."""
    cgroup: Literal["auto", "cgroupfs", "systemd", "off"] = "auto"
    """How the tree-wide bounds are applied: ``auto`` tries the cgroup filesystem, then
    ``systemd-run --user --scope``; ``off`` leaves the rlimits alone."""


class SandboxSettings(BaseModel):
    """harness.yaml ``sandbox:`` — the agent's commands run in bubblewrap, applied by
    ``agents/sandbox.py``."""

    model_config = ConfigDict(extra="forbid")

    required: bool = True
    """No working sandbox → no run with a shell (dev-agent, push heal, patch suggester).
    ``false`` runs them UNSANDBOXED on such a machine, with a warning at every run."""
    toolchain: list[str] = Field(default_factory=list)
    """Extra folders the agent's commands may read (compilers, SDKs) besides /usr, /bin, /lib,
    a few /etc files, the interpreters on PATH and the harness's Python."""
    limits: LimitSettings = Field(default_factory=LimitSettings)
    """Processes, memory, CPU time and file size of each command (``agents/limits.py``)."""
