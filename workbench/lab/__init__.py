"""The JupyterLab side of the workbench: a live training dashboard and viewers of evolved agents.

  TrainingDashboard   fitness curves, gameplay, throughput, live hyperparameters, run controls, log
  AgentViewer         replay of one agent: scrubber, RGB screen beside the network's input, score, actions
  compare_generations two generations' elites side by side
  ArchiveView         a quality-diversity archive as a live heatmap: hover a cell to read it, click to replay its elite
  RunMonitor          the dashboard's data, fed by trainer events (no widgets; tested on its own)
  observation_strip, timeline_figure, trap_positions_figure
                      the pictures and plots the tutorials draw (a network's input, an evaluator's
                      timeline, where episodes ended in the humanoid trap)

The widgets need ipywidgets (pip install -e ".[notebook]"); the rest of the workbench does not, and neither do
the plots (workbench.lab.plots: the command line's fitness.png is the dashboard's fitness plot).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.lazy_exports import lazy_exports

if TYPE_CHECKING:  # the public names; each loads with its submodule on first use (workbench/lazy_exports.py)
    from workbench.lab.agent_viewer import AgentViewer, Comparison, compare_generations
    from workbench.lab.archive_view import ArchiveView
    from workbench.lab.dashboard import TrainingDashboard
    from workbench.lab.pictures import observation_strip
    from workbench.lab.plots import timeline_figure, trap_positions_figure
    from workbench.lab.run_monitor import RunMonitor

__all__ = [
    "AgentViewer",
    "ArchiveView",
    "Comparison",
    "RunMonitor",
    "TrainingDashboard",
    "compare_generations",
    "observation_strip",
    "timeline_figure",
    "trap_positions_figure",
]

__getattr__ = lazy_exports(__name__)
