"""The benchmarks: each script measures the baseline, the limit and the workbench's figure in the same run and
ends with one JSON line (docs/benchmarks.md). The package installs them as `workbench.bench`, so
`python -m workbench.bench.NAME` (and `python -m workbench bench NAME`) runs one from any install; in a source
checkout `python bench/NAME.py` does the same."""
