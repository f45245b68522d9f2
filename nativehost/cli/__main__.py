"""``python -m nativehost.cli``."""

import sys

from nativehost.cli.main import main

sys.exit(main())
