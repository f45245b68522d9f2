"""Actors: the asyncio runtime (``actors.runtime.actor``), thread-bound actors on pykka
(``actors.runtime.thread_actor``, ``actors.runtime.threaded``), and one module per actor
(``actors.runtime.logger``, ...).

Kept light on purpose: importing ``actors`` imports nothing else, so the relay, which imports
only what it uses, starts fast. Import the submodules you need.
"""

__all__: list[str] = []
