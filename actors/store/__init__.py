"""The session store: one append-only msgpack journal per chat, and what it answers."""
