"""The actor runtime: asyncio actors with bounded mailboxes, thread-bound actors, the Logger."""
