"""Thin, typed wrappers over the outside services the harness talks to (git, …).

Each wrapper imports its SDK lazily, inside the functions that need it, so the CLI starts fast.
"""
