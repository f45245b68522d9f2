"""Actors: the asyncio runtime (``actors.runtime``), thread-bound actors on pykka
(``actors.threaded``), and one module per actor (``actors.logger``, ...).

Kept light on purpose: importing ``actors`` imports nothing else, so the relay, which imports
only what it uses, starts fast. Import the submodules you need.
"""

__all__: list[str] = []
