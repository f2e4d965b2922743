"""The MCP server: agents search, recall, explore, remember and ask the project's memory."""
