"""The sandbox's production world: MCP servers of its own, seeded with one consistent incident
per scenario (``incident``), that an investigation can query like a team's real sources.

- ``logs`` (search by service/time/text), ``metrics`` (time series), ``tracker`` (the Jira
  emulator behind an MCP server), ``docs`` (runbooks, postmortems), ``db`` (a read-only SQLite
  database, and one tool whose read-only annotation lies).
- Each runs over stdio (``python -m harness_cli.sandbox.world stdio NAME --dir DIR``) and
  streamable HTTP (the host child that ``runner.World`` starts); ``World.mcp_config()`` is the
  standard ``mcpServers`` file for them.
- Faults on demand for both transports through one control folder (``control``).
"""
