"""``python -m microtrain ...`` is the ``microtrain`` command."""

import sys

from .cli import main

sys.exit(main())
