"""The agent: sessions, turns and what they reach for, in the daemon.

The six actors the design names live here and beside it: the Connection (one per link, the front
door), :class:`~actors.agent.session_router.SessionRouter` and
:class:`~actors.agent.turn_scheduler.TurnScheduler`; a turn (:mod:`actors.agent.turn`) runs as a
task child of the ``turns`` supervisor. Browser calls go through :mod:`actors.browser`, model calls
through :mod:`actors.model`, the journal is :mod:`actors.store`."""
