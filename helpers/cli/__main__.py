"""``python -m helpers.cli``: the ``workbook`` command."""

import sys

from helpers.cli import main

sys.exit(main())
