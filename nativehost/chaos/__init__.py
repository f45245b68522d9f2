"""``browy chaos``: the fault-injection harness, in-process and with real processes."""
