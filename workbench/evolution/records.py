"""GenerationRecord: what one generation of a run was, typed, with one JSON form for logs and checkpoints.

A strategy writes the search side when a generation ends (fitness statistics,
the elite, evaluations, the hyperparameters in force, and its own `extras`);
the Trainer adds the evaluation side (frames, seconds, throughput, the time
split of TIME_SPLIT names) with with_evaluation(). Everything that shows or
stores generations (the CLI, JSONL and TensorBoard logs, the run monitor, the
dashboard, replays, notebooks) reads these fields.

JSON form (to_json / from_json): one flat object per generation, as in
history.jsonl, which pandas reads as one row per generation:

    {"generation": 3, "max": 210.0, "mean": 31.7, "median": 20.0, "elite": 190.0,
     "elite_genome": {...}, "evaluations": 1030, "gradient_norm": 0.4,     <- extras, flat
     "frames": 161505, "frames_total": 640000, "seconds": 19.4, "frames_per_second": 8333.0,
     "emulation_fraction": 0.4, "inference_fraction": 0.5, "weight_loading_fraction": 0.02,
     "idle_fraction": 0.08, "bytes_shipped": 0, "busy_frames_per_second": 9100.0, "tail_seconds": 2.1,
     "rounds": [{"phase": "population", "episodes": 1000, "frames": 150000, "seconds": 17.0,
                 "busy_frames_per_second": 9200.0, "tail_seconds": 1.4, "occupancy": [1.0, ..., 0.2]}, ...],
     "hyperparameters": {...}}

from_json also reads the records of runs written before this class (the same keys,
with the strategy's hyperparameters under "config").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from numbers import Real
from typing import Any

# Where an evaluation's time goes (workbench.evaluation.telemetry measures it): the one spelling of these names.
# fused_steps: environment steps and the policy's inference run together, a graph call of many steps that cannot be
# split between them (continuous control on the ops: the evaluator's sub-population).
TIME_SPLIT = ("emulation", "inference", "weight_loading", "fused_steps", "idle")

_SEARCH_FIELDS = ("generation", "max", "mean", "median", "elite", "elite_genome", "evaluations")
_EVALUATION_FIELDS = (
    "frames",
    "frames_total",
    "seconds",
    "frames_per_second",
    "bytes_shipped",
    "busy_frames_per_second",
    "tail_seconds",
    "rounds",
)
# One evaluation round of a generation (GenerationRecord.rounds): the strategy's phase name, its episodes,
# frames and wall seconds, the rate of its busy phase (every slot running) and its tail (slots running dry),
# and the share of the slots running episodes over equal slices of its wall time (evaluation.telemetry).
ROUND_FIELDS = ("phase", "episodes", "frames", "seconds", "busy_frames_per_second", "tail_seconds", "occupancy")


def _round(index: int, data: Any) -> dict:
    """A checked round dict of ROUND_FIELDS (occupancy as a tuple)."""
    if not isinstance(data, Mapping) or set(data) != set(ROUND_FIELDS):
        raise ValueError(f"record rounds[{index}] must be a dict of {ROUND_FIELDS}, got {data!r:.120}")
    if not isinstance(data["phase"], str):
        raise ValueError(f"record rounds[{index}]['phase'] must be a string, got {data['phase']!r:.80}")
    for name in ROUND_FIELDS[1:-1]:
        _number(f"rounds[{index}][{name!r}]", data[name])
    occupancy = tuple(_number(f"rounds[{index}]['occupancy']", value) for value in data["occupancy"])
    return {name: data[name] for name in ROUND_FIELDS[:-1]} | {"occupancy": occupancy}


def _number(name: str, value: Any) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, Real)):
        raise ValueError(f"record field {name} must be a number or None, got {value!r:.80}")
    return value


@dataclasses.dataclass(frozen=True)
class GenerationRecord:
    """One generation: search side (from the strategy) and evaluation side (from the trainer).

    generation: the generation's number (0 first). max / mean / median: of the members' fitness
      (mean episode return; NaN counts as -inf and is left out of mean and median).
    elite: the elite's (re-)evaluated fitness, None when the strategy has none this generation.
    elite_genome: the elite as Genome JSON (replays and the agent viewer rebuild it).
    evaluations: episodes the generation ran. hyperparameters: the settings in force (the strategy's
      config, plus max_episode_frames once the trainer has recorded it).
    extras: numbers a strategy adds (ES: gradient_norm; novelty search: center, center_return,
      novelty_mean, novelty_max, archive_size; the GA with self-adapted sigma: sigma_median); each
      strategy lists its names in Strategy.EXTRAS.
    frames, frames_total, seconds, frames_per_second, time_split ({TIME_SPLIT name: fraction}),
      bytes_shipped: the trainer's measurements (0 and {} until it fills them).
    busy_frames_per_second: the rate of the rounds' busy phases together (every slot running);
      tail_seconds: the rounds' tails together (slots running dry); rounds: one dict of ROUND_FIELDS per
      evaluation round, in order.
    """

    generation: int
    max: float
    mean: float
    median: float
    elite: float | None
    elite_genome: dict | None
    evaluations: int
    hyperparameters: dict = dataclasses.field(default_factory=dict)
    extras: dict = dataclasses.field(default_factory=dict)
    frames: int = 0
    frames_total: int = 0
    seconds: float = 0.0
    frames_per_second: float = 0.0
    time_split: dict = dataclasses.field(default_factory=dict)
    bytes_shipped: int = 0
    busy_frames_per_second: float = 0.0
    tail_seconds: float = 0.0
    rounds: tuple = ()

    def __post_init__(self) -> None:
        for name in (
            "max",
            "mean",
            "median",
            "elite",
            "frames",
            "frames_total",
            "seconds",
            "frames_per_second",
            "busy_frames_per_second",
            "tail_seconds",
        ):
            _number(name, getattr(self, name))
        object.__setattr__(self, "rounds", tuple(_round(k, r) for k, r in enumerate(self.rounds)))
        clashes = set(self.extras) & (set(_SEARCH_FIELDS) | set(_EVALUATION_FIELDS) | {"hyperparameters"})
        if clashes:
            raise ValueError(f"record extras must not reuse the names of fields: {sorted(clashes)}")
        for name, value in self.extras.items():
            _number(f"extras[{name!r}]", value)
        unknown = set(self.time_split) - set(TIME_SPLIT)
        if unknown:
            raise ValueError(f"time_split names must be among {TIME_SPLIT}, got {sorted(unknown)}")

    def with_evaluation(self, **measurements: Any) -> GenerationRecord:
        """This record with the trainer's fields (frames, frames_total, seconds, ..., hyperparameters) set."""
        return dataclasses.replace(self, **measurements)

    def get(self, name: str, default: Any = None) -> Any:
        """A field, a time-split fraction ("idle_fraction") or an extra by its JSON name (default when absent)."""
        return self.to_json().get(name, default)

    # -- JSON -----------------------------------------------------------------------------
    def to_json(self) -> dict:
        data = {name: getattr(self, name) for name in _SEARCH_FIELDS}
        data.update(self.extras)
        data.update({name: getattr(self, name) for name in _EVALUATION_FIELDS[:4]})
        data.update({f"{name}_fraction": self.time_split[name] for name in TIME_SPLIT if name in self.time_split})
        data["bytes_shipped"] = self.bytes_shipped
        data["busy_frames_per_second"], data["tail_seconds"] = self.busy_frames_per_second, self.tail_seconds
        data["rounds"] = [dict(r, occupancy=list(r["occupancy"])) for r in self.rounds]
        data["hyperparameters"] = dict(self.hyperparameters)
        return data

    @classmethod
    def from_json(cls, data: Mapping) -> GenerationRecord:
        """The record of to_json() output (or of a record written before this class existed)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a generation record is a dict, got {type(data).__name__}")
        data = dict(data)
        missing = [name for name in _SEARCH_FIELDS if name not in data and name != "elite_genome"]
        if missing:
            raise ValueError(f"generation record lacks {missing}")
        fields = {name: data.pop(name) for name in _SEARCH_FIELDS if name in data}
        fields.setdefault("elite_genome", None)
        fields["generation"] = int(fields["generation"])
        fields["evaluations"] = int(fields["evaluations"])
        for name in ("max", "mean", "median"):  # JSON writes -inf as -Infinity; keep floats floats
            fields[name] = float(fields[name]) if fields[name] is not None else math.nan
        hyperparameters = data.pop("hyperparameters", None)
        legacy_config = data.pop("config", None)  # strategy histories before GenerationRecord
        fields["hyperparameters"] = dict(hyperparameters if hyperparameters is not None else legacy_config or {})
        for name in _EVALUATION_FIELDS:
            if name in data:
                fields[name] = data.pop(name)
        fields["time_split"] = {name: data.pop(f"{name}_fraction") for name in TIME_SPLIT if f"{name}_fraction" in data}
        fields["extras"] = data
        return cls(**fields)
