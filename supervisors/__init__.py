"""Supervision: the pure restart policy (``supervisors.policy``), the OTP-style asyncio
supervisor (``supervisors.supervisor``) with its children (``supervisors.children``), errors
(``supervisors.errors``) and what it shows outside (``supervisors.introspection``), and the trees
built from them. Import the submodules; this package imports nothing.
"""

__all__: list[str] = []
