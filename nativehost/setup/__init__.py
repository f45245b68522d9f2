"""Setting Browy up: registering the native host with the browsers, and ``browy doctor``."""
