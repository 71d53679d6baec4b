"""``python -m gridsample``: the same as the ``gridsample`` command."""

import sys

from .cli import main

sys.exit(main())
