"""``python -m nativehost.relay``."""

import sys

from nativehost.relay.main import main

sys.exit(main())
