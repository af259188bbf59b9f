"""The fitness plot (the dashboard's, and the command line's fitness.png): readable after any number of generations."""

import pytest
from PIL import Image

from support import generation_record
from workbench.lab.plots import FitnessPlot
from workbench.lab.run_monitor import FITNESS_SERIES, RunMonitor


@pytest.mark.parametrize("generations", [1, 2, 7])
def test_every_series_has_markers_and_the_axis_spans_whole_generations(generations, tmp_path):
    plot = FitnessPlot()
    plot.update(RunMonitor(history=[generation_record(g) for g in range(generations)]))
    for name in FITNESS_SERIES:
        assert plot.lines[name].get_marker() not in (None, "None", ""), name  # one generation is a visible point
        assert plot.data(name)[0] == list(range(generations))
    assert plot.axes.get_xlim() == (-0.5, generations - 0.5)
    ticks = [t for t in plot.axes.get_xticks() if -0.5 <= t <= generations - 0.5]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
    path = plot.save(str(tmp_path / "fitness.png"))
    assert Image.open(path).size == (640, 320)


def test_the_command_line_writes_the_same_plot(tmp_path):
    from workbench.cli import plot_history

    history = [generation_record(0)]
    image = Image.open(plot_history(history, str(tmp_path / "fitness.png")))
    assert image.format == "PNG" and image.size == (700, 400)
