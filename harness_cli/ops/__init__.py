"""Operations: the outbound allowlist, notifications, status reporting, MCP health."""
