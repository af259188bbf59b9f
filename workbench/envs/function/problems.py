"""Function problems: a fitness that is a function of the parameter vector itself, no environment, no network.

    problem = FunctionProblem("my-loss", dimension=100, objective=lambda x: (x ** 2).sum(axis=1))
    register_function_problem(problem)          # now "my-loss" is an env name: RunConfig(env="my-loss", ...)
    find_function_problem("rastrigin-100")      # a built-in, its dimension in its name
    find_function_problem("bbob-f8-i1-d20")     # COCO's BBOB f8, instance 1, in 20 dimensions (coco-experiment)

objective(x) takes a population matrix x [k, dimension] (float64) and returns k values (a numpy array, a list,
or a TensorFlow tensor: a tf.function over the matrix works). Problems minimise by default, as the literature
writes them: a run's return (which every strategy here maximises) is -objective(x); maximize=True returns it
unchanged. A noisy objective (noisy=True) is called objective(x, seeds) with one uint64 seed per row, a fresh
one per episode (workbench.envs.rng.episode_seed), so its draws repeat exactly when the run is replayed; a
deterministic one is called once per genome, whatever the episodes asked for.

Built-in names (the dimension after the last dash; the optima of the first four are 0, at the origin but
Rosenbrock's, at 1):
  sphere-N       sum x_i^2
  ellipsoid-N    sum 10^(6 (i - 1) / (N - 1)) x_i^2: condition number 1e6
  rastrigin-N    10 N + sum (x_i^2 - 10 cos(2 pi x_i)): 10^N local minima
  rosenbrock-N   sum 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2: a bent valley
  bbob-fF-iI-dN  COCO's BBOB function F (1-24), instance I, dimension N (2, 3, 5, 10, 20 or 40): COCO's value f(x),
                 whose optimum f_opt is the instance's own (cocoex does not expose it; COCO's targets are
                 f_opt + 10^k); needs the coco-experiment package (pip install coco-experiment)
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.checks import check_bool, check_int, check_real, check_type

BUILT_IN = ("sphere", "ellipsoid", "rastrigin", "rosenbrock")
BBOB_DIMENSIONS = (2, 3, 5, 10, 20, 40)
MAX_DIMENSION = 2**31 - 1  # a genome's offsets are int64; the noise table bounds it further (ParameterSpace)
_BUILT_IN_NAME = re.compile(r"(?P<function>[a-z]+)-(?P<dimension>[0-9]+)")
_BBOB_NAME = re.compile(r"bbob-f(?P<function>[0-9]+)-i(?P<instance>[0-9]+)-d(?P<dimension>[0-9]+)")


@dataclasses.dataclass(frozen=True)
class FunctionProblem:
    """A black-box problem over parameter vectors of `dimension` values.

    name: the env name runs use (lower case, no spaces). objective: callable(x [k, dimension] float64) -> k
    values (noisy: objective(x, seeds [k] uint64)). maximize: the objective is a fitness to maximise (default: a
    loss to minimise; runs' returns are then -objective). init_scale: the standard deviation of a random initial
    vector (strategies that start from the space's random initial weights: GA, CMA with initial="random").
    description: one line for listings and errors.
    """

    name: str
    dimension: int
    objective: Callable[..., Any]
    maximize: bool = False
    noisy: bool = False
    init_scale: float = 1.0
    description: str = ""

    def __post_init__(self) -> None:
        check_type("name", self.name, str, "a string")
        if not self.name or self.name != self.name.strip().lower() or " " in self.name:
            raise ValueError(f"name must be a non-empty lower-case string without spaces, got {self.name!r}")
        check_int("dimension", self.dimension, 1, MAX_DIMENSION)
        if not callable(self.objective):
            raise TypeError(f"objective must be callable(x [k, dimension]) -> k values, got {type(self.objective).__name__}")
        check_bool("maximize", self.maximize)
        check_bool("noisy", self.noisy)
        check_real("init_scale", self.init_scale, 0.0, low_open=True)
        check_type("description", self.description, str)

    def returns(self, x: np.ndarray, seeds: np.ndarray | None = None) -> np.ndarray:
        """The returns of the rows of x [k, dimension] (float64 [k]: -objective unless maximize; non-finite values
        stay as they are, the strategies rank them last). seeds [k]: one per row, for a noisy objective."""
        returned = np.asarray(self.objective(x, seeds) if self.noisy else self.objective(x))
        expected = f"one real value per row of x [{len(x)}, {self.dimension}]"
        if returned.dtype.kind not in "biuf" or returned.shape not in ((len(x),), (len(x), 1)):
            raise ValueError(
                f"function problem {self.name!r}: objective must return {expected}, got shape {returned.shape} and "
                f"dtype {returned.dtype}"
            )
        values = returned.astype(np.float64).reshape(len(x))
        return values if self.maximize else -values


# -- the built-in functions -----------------------------------------------------------------------------------
def sphere(x: np.ndarray) -> np.ndarray:
    return np.einsum("ki,ki->k", x, x)


def ellipsoid(x: np.ndarray) -> np.ndarray:
    n = x.shape[1]
    weights = 10.0 ** (6.0 * np.arange(n) / (n - 1)) if n > 1 else np.ones(1)
    return (x * x) @ weights


def rastrigin(x: np.ndarray) -> np.ndarray:
    return 10.0 * x.shape[1] + (x * x - 10.0 * np.cos(2.0 * np.pi * x)).sum(axis=1)


def rosenbrock(x: np.ndarray) -> np.ndarray:
    if x.shape[1] == 1:
        return (1.0 - x[:, 0]) ** 2
    return (100.0 * (x[:, 1:] - x[:, :-1] ** 2) ** 2 + (1.0 - x[:, :-1]) ** 2).sum(axis=1)


_FUNCTIONS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str]] = {
    "sphere": (sphere, "the sphere, sum x_i^2"),
    "ellipsoid": (ellipsoid, "the ellipsoid, condition number 1e6"),
    "rastrigin": (rastrigin, "Rastrigin's function, 10^N local minima"),
    "rosenbrock": (rosenbrock, "Rosenbrock's valley, optimum at 1"),
}


class BBOBObjective:
    """COCO's BBOB function as a batched objective: COCO's f(x) per row. The cocoex problem is made on first use
    in each process (it cannot be pickled; the objective can, so a Ray worker makes its own)."""

    def __init__(self, function: int, instance: int, dimension: int) -> None:
        self.function, self.instance, self.dimension = function, instance, dimension
        self._problem: Any = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        return dict(function=self.function, instance=self.instance, dimension=self.dimension)

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        with self._lock:  # a cocoex problem is not thread-safe
            if self._problem is None:
                try:
                    import cocoex
                except ImportError:
                    raise ImportError(
                        "the bbob-* function problems need COCO's coco-experiment package: pip install coco-experiment"
                    ) from None
                options = f"dimensions: {self.dimension} function_indices: {self.function} instance_indices: {self.instance}"
                self._problem = cocoex.Suite("bbob", "", options).get_problem(0)
            return np.array([self._problem(row) for row in x])


def _built_in(name: str) -> FunctionProblem | None:
    """The built-in problem called `name`, or None when `name` is no built-in name; ValueError for a built-in
    name with an impossible dimension, function or instance."""
    match = _BBOB_NAME.fullmatch(name)
    if match:
        function, instance, dimension = (int(match[k]) for k in ("function", "instance", "dimension"))
        if not 1 <= function <= 24:
            raise ValueError(f"{name}: BBOB has functions 1 to 24, got {function}")
        if dimension not in BBOB_DIMENSIONS:
            raise ValueError(f"{name}: BBOB's dimensions are {', '.join(map(str, BBOB_DIMENSIONS))}, got {dimension}")
        if instance < 1:
            raise ValueError(f"{name}: BBOB's instances count from 1, got {instance}")
        return FunctionProblem(
            name,
            dimension,
            BBOBObjective(function, instance, dimension),
            init_scale=2.0,
            description=f"COCO's BBOB f{function}, instance {instance}",
        )
    match = _BUILT_IN_NAME.fullmatch(name)
    if match and match["function"] in _FUNCTIONS:
        dimension = int(match["dimension"])
        if not 1 <= dimension <= MAX_DIMENSION:
            raise ValueError(f"{name}: a dimension is an integer from 1 to {MAX_DIMENSION}, got {dimension}")
        objective, description = _FUNCTIONS[match["function"]]
        return FunctionProblem(name, dimension, objective, description=f"{description}, in {dimension} dimensions")
    return None


# -- the registry of named problems ---------------------------------------------------------------------------
_REGISTERED: dict[str, FunctionProblem] = {}
_registry_lock = threading.Lock()


def register_function_problem(problem: FunctionProblem, *, replace: bool = False) -> FunctionProblem:
    """Makes `problem.name` an environment name in this process (RunConfig(env=problem.name), the command line
    of a script that registered it first); ValueError when the name is a built-in one or taken (replace=True
    replaces a problem registered under it, as a notebook cell run twice does). Returns the problem."""
    check_type("problem", problem, FunctionProblem)
    if _BBOB_NAME.fullmatch(problem.name) or (
        _BUILT_IN_NAME.fullmatch(problem.name) and problem.name.split("-")[0] in _FUNCTIONS
    ):
        raise ValueError(f"{problem.name!r} is a built-in function problem's name: choose another")
    with _registry_lock:
        if problem.name in _REGISTERED and not replace:
            raise ValueError(f"a function problem called {problem.name!r} is registered already (replace=True replaces it)")
        _REGISTERED[problem.name] = problem
    return problem


def unregister_function_problem(name: str) -> None:
    """Forgets the problem registered as `name` (KeyError when there is none)."""
    with _registry_lock:
        del _REGISTERED[name]


def registered_function_problem(name: str) -> FunctionProblem | None:
    """The problem registered as `name` in this process (None for a built-in or unknown name)."""
    with _registry_lock:
        return _REGISTERED.get(name)


def find_function_problem(name: str) -> FunctionProblem | None:
    """The problem called `name` (registered first, then the built-in names), or None for a name that is neither;
    ValueError for a built-in name that cannot be (rastrigin-0, bbob-f25-i1-d10)."""
    registered = registered_function_problem(name)
    return registered if registered is not None else _built_in(name)


def function_problem(name: str) -> FunctionProblem:
    """The problem called `name`; ValueError naming the built-in forms when there is none."""
    problem = find_function_problem(name)
    if problem is None:
        raise ValueError(
            f"{name!r} is no function problem: the built-in ones are {', '.join(f'{f}-N' for f in BUILT_IN)} and "
            "bbob-fF-iI-dN; register_function_problem() adds your own"
        )
    return problem


def function_problem_names() -> list[str]:
    """The registered names and an example of each built-in form (for close matches in errors)."""
    with _registry_lock:
        registered = sorted(_REGISTERED)
    return registered + [f"{function}-10" for function in BUILT_IN] + ["bbob-f1-i1-d10"]
