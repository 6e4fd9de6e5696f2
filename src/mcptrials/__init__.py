"""mcptrials: a reproducible, incremental benchmark harness for MCP servers."""

__version__ = "0.1.0"
