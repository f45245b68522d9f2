"""Browy's wire vocabulary: error codes, the native-messaging codec, the daemon link, wire models.

The package itself imports nothing, so ``import messages.codec`` stays free of pydantic (the
relay must start fast). Import from the submodules:

- :mod:`messages.errors` - ``ErrorCode`` and the exception tree
- :mod:`messages.codec` - native messaging framing (sans-I/O)
- :mod:`messages.link` - relay/CLI <-> daemon link framing (sans-I/O)
- :mod:`messages.wire` - pydantic models of every wire message, ``parse_inbound``, ``dump_outbound``
"""

__all__: list[str] = []
