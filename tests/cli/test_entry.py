"""`python -m rxvoice` is the `rxvoice` command."""

from __future__ import annotations

import subprocess
import sys

from rxvoice import __version__


def test_python_dash_m_rxvoice_runs_the_cli() -> None:
    """`python -m rxvoice --version` and `--help` answer as the console script does."""
    version = subprocess.run([sys.executable, "-m", "rxvoice", "--version"], capture_output=True, text=True,
                             timeout=60)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"rxvoice {__version__}"
    helped = subprocess.run([sys.executable, "-m", "rxvoice", "--help"], capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0 and "{demo,turns,eval,model,serve}" in helped.stdout
    bad = subprocess.run([sys.executable, "-m", "rxvoice", "dance"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("rxvoice: error: ")
