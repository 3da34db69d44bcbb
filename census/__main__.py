"""``python -m census RELEASE`` (see `census._cli`)."""

import sys

from ._cli import main

sys.exit(main())
