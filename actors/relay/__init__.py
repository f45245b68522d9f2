"""The relay's side: Chrome's pipes (StdioFramer), the link to the daemon (Uplink), their rules."""
