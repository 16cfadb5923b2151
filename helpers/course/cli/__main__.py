"""``python -m helpers.course.cli``: the ``workbook`` command."""

import sys

from helpers.course.cli import main

sys.exit(main())
