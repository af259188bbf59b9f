"""python -m workbench: the command line (workbench/cli.py)."""
import sys

from workbench.cli import main

sys.exit(main())
