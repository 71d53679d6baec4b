"""``python -m gridsample.cli``: the same as the ``gridsample`` command."""

import sys

from . import main

sys.exit(main())
