"""The throughput benchmarks: each measures the baseline, the limit and the workbench's figure in the same run and
ends with one JSON line (docs/benchmarks.md). `python -m workbench bench NAME` (or `python -m workbench.bench.NAME`)
runs one from any install. They print their line and record it into the committed results only when asked
(--record); the experiments that use them (learning suites, studies, result pages) are in the checkout's
experiments/ folder, which is not installed."""
