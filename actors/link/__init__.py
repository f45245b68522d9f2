"""The link between the relay (or a local client) and the daemon: its asyncio shell."""
