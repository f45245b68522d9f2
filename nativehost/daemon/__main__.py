"""``python -m nativehost.daemon``."""

import sys

from nativehost.daemon.process import main

sys.exit(main())
