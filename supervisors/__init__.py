"""Supervision: the pure restart policy (``supervisors.policy``) and the OTP-style asyncio
supervisor (``supervisors.supervisor``). Import the submodules; this package imports nothing.
"""

__all__: list[str] = []
