"""The browyd daemon: the process (single instance, detached start) and its server."""
