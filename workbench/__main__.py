"""python -m workbench: the command line (workbench/cli.py)."""

from __future__ import annotations

import sys

from workbench.cli import main

sys.exit(main())
