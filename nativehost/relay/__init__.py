"""The native messaging host Chrome starts (``com.browy.host``): a relay to the daemon."""
