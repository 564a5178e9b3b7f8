"""``python -m rtcc`` is the same as the ``rtcc`` command."""

import sys

from .cli import main

sys.exit(main())
