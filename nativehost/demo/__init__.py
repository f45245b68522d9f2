"""``browy demo``: the demo shop, a private Chromium, and the scripted model server."""
