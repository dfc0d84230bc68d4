"""``python -m microtrain ...`` is the ``microtrain`` command."""

import sys

from .tools.cli import main

sys.exit(main())
