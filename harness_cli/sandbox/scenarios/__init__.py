"""Seed data for the sandbox emulators: sample projects and the tickets that go with them."""
