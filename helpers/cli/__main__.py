"""``python -m helpers.cli``: the ``workbook`` command."""

import sys

from helpers.cli import console_main

sys.exit(console_main())
