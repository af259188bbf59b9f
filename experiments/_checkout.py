"""Imported first by every experiment script: puts this checkout's package ahead of any installed one on sys.path,
so an experiment run from a checkout (a worktree's, say) uses that checkout's workbench, and names the folders.

The experiments are not part of the installed package: they are scripts run from a checkout
(`python experiments/NAME.py`), which import one another as siblings (this folder is on sys.path) and the
workbench through its public API (workbench.training, workbench.bench.common for the recorded lines).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")  # the committed results: benchmarks' and experiments' JSON lines, run folders
if sys.path[:1] != [CHECKOUT]:
    sys.path.insert(0, CHECKOUT)
if HERE not in sys.path:
    sys.path.insert(1, HERE)  # the siblings, also when a script is loaded by path (the tests)
