"""``browy mcp``: the user's live browser as an MCP server, for any agent (Claude Code, Codex…)."""
