"""``python -m streams run module:app``."""

import sys

from streams.cli import main

sys.exit(main())
