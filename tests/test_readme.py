"""The README's figures are generated, not typed: they must match what the code measures now."""

from __future__ import annotations

import subprocess
import sys


def test_readme_figures_are_current() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "helpers.readme_figures", "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr + " (run `make figures`)"
