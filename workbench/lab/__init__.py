"""The JupyterLab side of the workbench: a live training dashboard and viewers of evolved agents.

  TrainingDashboard   fitness curves, gameplay, throughput, live hyperparameters, run controls, log
  AgentViewer         replay of one agent: scrubber, RGB screen beside the network's input, score, actions
  compare_generations two generations' elites side by side
  RunMonitor          the dashboard's data, fed by trainer events (no widgets; tested on its own)

Needs ipywidgets (pip install -e ".[notebook]"); the rest of the workbench does not.
"""

from __future__ import annotations

from workbench.lab.agent_viewer import AgentViewer, Comparison, compare_generations
from workbench.lab.dashboard import TrainingDashboard
from workbench.lab.run_monitor import RunMonitor

__all__ = ["AgentViewer", "Comparison", "RunMonitor", "TrainingDashboard", "compare_generations"]
