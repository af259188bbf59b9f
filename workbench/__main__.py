"""python -m workbench: the command line (workbench/cli.py)."""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from workbench.cli import main  # noqa: E402

sys.exit(main())
