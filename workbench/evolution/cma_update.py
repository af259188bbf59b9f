"""The CMA-ES update in float64 numpy, apart from sampling: given the standard-normal draws and their fitness.

    update = CovarianceUpdate(mean, sigma)                  # full covariance (Hansen's tutorial, 2016)
    update = DiagonalUpdate(mean, sigma)                    # sep-CMA-ES (Ros & Hansen 2008)
    z = draws [lambda, n] of N(0, I)                        # from the noise table, or injected by a test
    x = update.sample(z)                                    # m + sigma * A z, A = B D (full) or D (diagonal)
    update.tell(z, fitness)                                 # fitness [lambda], maximised; the order decides
    update.step_size, update.mean, update.scales()          # sigma, m, the per-parameter standard deviations

With y_k = A z_k and the members ranked best first, one generation is (g counts the updates, this one included):

    y_w   = sum_{i <= mu} w_i y_i;                   m  <- m + c_m sigma y_w
    p_s   <- (1 - c_s) p_s + sqrt(c_s (2 - c_s) mu_eff) C^{-1/2} y_w      (C^{-1/2} y = B z: no inverse)
    sigma <- sigma exp(c_s / d_s (|p_s| / E|N(0, I)| - 1))
    h_s   = |p_s| / sqrt(1 - (1 - c_s)^(2 (g + 1))) < (1.4 + 2 / (n + 1)) E|N(0, I)|
    p_c   <- (1 - c_c) p_c + h_s sqrt(c_c (2 - c_c) mu_eff) y_w
    C     <- (1 + c_1 (1 - h_s) c_c (2 - c_c) - c_1 - c_mu sum w) C + c_1 p_c p_c^T + c_mu sum_i w°_i y_i y_i^T

with w°_i = w_i for w_i >= 0 and w_i n / |C^{-1/2} y_i|^2 = w_i n / |z_i|^2 for the negative weights of the full
form (active CMA, the tutorial's default). The diagonal form keeps diag(C) only, with the mu positive weights and
Ros & Hansen's learning rates: c_cov = ((n + 2) / 3) (2 / (mu_eff (n + sqrt 2)^2) + (1 - 1 / mu_eff)
min(1, (2 mu_eff - 1) / ((n + 2)^2 + mu_eff))), split c_1 = c_cov / mu_eff, c_mu = c_cov (1 - 1 / mu_eff); its
c_s = (mu_eff + 2) / (n + mu_eff + 3) and c_c = 4 / (n + 4). The `cmaes` package (CMA and SepCMA) computes the same
update; its SepCMA's c_1 is the full form's (tests/evolution/test_cma_update.py compares both, the rates injected).

tell(z, fitness, parents=k) recombines the best k members instead (CMA-ME's "filter" selection: as many parents as
members entered the archive): w_i proportional to ln(k + 1/2) - ln i for i <= k, no negative weights, and every rate
recomputed from their mu_eff (Fontaine et al. 2020, after Hansen's purecma); the default recombination is back after.

After each update C is made symmetric and decomposed (B, D); eigenvalues below a floor (the covariance lost
positive definiteness to rounding) are raised to it and counted in `repairs`. `learning_rates` overrides c_1,
c_mu, c_c, c_s or d_s (tests inject a reference's values); all else follows the tutorial's defaults.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator, Mapping

import numpy as np

EIGENVALUE_FLOOR = 1e-300  # the smallest eigenvalue of C kept; lower ones are raised to it (a repair)
RATE_NAMES = ("c_1", "c_mu", "c_c", "c_s", "d_s")


@dataclasses.dataclass(frozen=True)
class Recombination:
    """The weights [lambda] of the members ranked best first, the parents mu, mu_eff and the rates that follow."""

    weights: np.ndarray
    mu: int
    mu_eff: float
    c_1: float
    c_mu: float
    c_c: float
    c_s: float
    d_s: float


def default_population_size(n: int) -> int:
    """4 + floor(3 ln n): the tutorial's lambda for n parameters."""
    return 4 + math.floor(3 * math.log(n))


def checked_start(mean: np.ndarray, sigma: float) -> np.ndarray:
    """The initial mean as float64 [n] (n >= 2, finite), else a ValueError; a ValueError for a sigma that is not a
    finite number > 0. What every adapted Gaussian's update checks when it is made."""
    mean = np.array(mean, np.float64)
    if mean.ndim != 1 or mean.size < 2 or not np.isfinite(mean).all():
        raise ValueError(f"mean must be a finite vector of at least 2 parameters, got shape {mean.shape}")
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a finite number > 0, got {sigma!r}")
    return mean


def expected_norm(n: int) -> float:
    """E|N(0, I_n)|, the tutorial's approximation sqrt(n) (1 - 1 / (4 n) + 1 / (21 n^2))."""
    return math.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n * n))


def ranking(fitness: np.ndarray) -> np.ndarray:
    """The members' indices best first: fitness maximised, a non-finite value (NaN, +-inf) last, ties in order."""
    fitness = np.asarray(fitness, np.float64)
    return np.argsort(-np.where(np.isfinite(fitness), fitness, -np.inf), kind="stable")


def _positive_weights(population_size: int, mu: int) -> np.ndarray:
    """w'_i = ln((lambda + 1) / 2) - ln i for i = 1..lambda (positive for the better half)."""
    return np.array([math.log((population_size + 1) / 2) - math.log(i + 1) for i in range(population_size)])


class CMAUpdate:
    """What both forms share: weights, paths, cumulative step-size adaptation (see the module docstring).

    Subclasses define the covariance: _decompose(), _transform(z) (y = A z), _untransform, _whitened, _tell_ranked()
    (the update from the ranked draws) and scales().
    """

    def __init__(
        self,
        mean: np.ndarray,
        sigma: float,
        population_size: int | None = None,
        learning_rates: Mapping[str, float] | None = None,
    ) -> None:
        mean = np.array(mean, np.float64)
        if mean.ndim != 1 or mean.size < 2:
            raise ValueError(f"mean must be a vector of at least 2 parameters, got shape {mean.shape}")
        if not np.isfinite(mean).all():
            raise ValueError("mean must be finite")
        if not (isinstance(sigma, (int, float, np.floating)) and math.isfinite(sigma) and sigma > 0):
            raise ValueError(f"sigma must be a finite number > 0, got {sigma!r}")
        n = mean.size
        lam = default_population_size(n) if population_size is None else int(population_size)
        if lam < 4:
            raise ValueError(f"population_size must be at least 4 (2 parents), got {lam}")
        self.n, self.population_size, self.mu = n, lam, lam // 2  # mu: the default parents (see _use)
        unknown = set(learning_rates or {}) - set(RATE_NAMES)
        if unknown:
            raise ValueError(f"unknown learning rates {sorted(unknown)}; known: {list(RATE_NAMES)}")
        self._rate_overrides = {name: float(value) for name, value in (learning_rates or {}).items()}
        self._default = self._recombination(self._weights(), lam // 2)
        self._by_parents: dict[int, Recombination] = {}
        self._use(self._default)
        self.chi_n = expected_norm(n)
        self.mean = mean
        self.sigma = float(sigma)
        self.p_s = np.zeros(n)
        self.p_c = np.zeros(n)
        self.generation = 0
        self.repairs = 0  # eigenvalues raised to EIGENVALUE_FLOOR, over the run
        self._init_covariance()
        self._decompose()

    # -- parameters -----------------------------------------------------------------------
    def _weights(self) -> np.ndarray:
        """The recombination weights, [lambda] (the full form: with negative ones)."""
        raise NotImplementedError

    def _default_rates(self, mu_eff: float) -> dict[str, float]:
        raise NotImplementedError

    def _step_size_rates(self, c_s: float, mu_eff: float) -> dict[str, float]:
        return dict(c_s=c_s, d_s=1 + 2 * max(0.0, math.sqrt((mu_eff - 1) / (self.n + 1)) - 1) + c_s)

    def _recombination(self, weights: np.ndarray, mu: int) -> Recombination:
        """The weights' mu_eff and the learning rates that follow from it (the overrides applied)."""
        positive = weights[:mu]
        mu_eff = float(positive.sum() ** 2 / (positive**2).sum())
        rates = dict(self._default_rates(mu_eff), **self._rate_overrides)
        c_1, c_mu, c_c, c_s, d_s = (rates[name] for name in RATE_NAMES)
        if not (0 <= c_1 and 0 <= c_mu and c_1 + c_mu <= 1 and 0 < c_c <= 1 and 0 < c_s < 1):
            raise ValueError(f"learning rates out of range: {rates}")
        return Recombination(weights, mu, mu_eff, c_1, c_mu, c_c, c_s, d_s)

    def parents_recombination(self, parents: int) -> Recombination:
        """The recombination of the best `parents` members (1 <= parents <= lambda) as CMA-ME takes it (Fontaine et
        al. 2020, after Hansen's purecma): w_i proportional to ln(parents + 1/2) - ln i, no negative weights, and
        the rates of their mu_eff."""
        parents = int(parents)
        if not 1 <= parents <= self.population_size:
            raise ValueError(f"parents must be in [1, {self.population_size}], got {parents}")
        if parents not in self._by_parents:
            raw = math.log(parents + 0.5) - np.log(np.arange(1, parents + 1))
            weights = np.zeros(self.population_size)
            weights[:parents] = raw / raw.sum()
            self._by_parents[parents] = self._recombination(weights, parents)
        return self._by_parents[parents]

    def _use(self, recombination: Recombination) -> None:
        self.recombination = recombination
        self.weights, self.mu, self.mu_eff = recombination.weights, recombination.mu, recombination.mu_eff
        self.c_1, self.c_mu, self.c_c = recombination.c_1, recombination.c_mu, recombination.c_c
        self.c_s, self.d_s = recombination.c_s, recombination.d_s

    @contextlib.contextmanager
    def _parents(self, parents: int | None) -> Iterator[None]:
        """The update inside uses the recombination of `parents` (None: the default one)."""
        if parents is None:
            yield
            return
        self._use(self.parents_recombination(parents))
        try:
            yield
        finally:
            self._use(self._default)

    # -- the covariance (subclasses) ------------------------------------------------------
    def _init_covariance(self) -> None:
        raise NotImplementedError

    def _decompose(self) -> None:
        raise NotImplementedError

    def _transform(self, z: np.ndarray) -> np.ndarray:
        """y = A z for draws z [k, n] (rows)."""
        raise NotImplementedError

    def _untransform(self, y: np.ndarray) -> np.ndarray:
        """z = A^{-1} y for rows y [k, n]."""
        raise NotImplementedError

    def _whitened(self, z: np.ndarray) -> np.ndarray:
        """C^{-1/2} y for y = A z: B z (full), z (diagonal)."""
        raise NotImplementedError

    def scales(self) -> np.ndarray:
        """The per-parameter standard deviations of the search distribution, sigma sqrt(diag C), [n]."""
        raise NotImplementedError

    # -- sampling and the update ----------------------------------------------------------
    def check_draws(self, z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, np.float64)
        if z.shape != (self.population_size, self.n):
            raise ValueError(f"draws must be [{self.population_size}, {self.n}], got shape {z.shape}")
        return z

    def sample(self, z: np.ndarray) -> np.ndarray:
        """The members m + sigma A z_k, float64 [lambda, n]."""
        return self.mean + self.sigma * self._transform(self.check_draws(z))

    def draws_of(self, members: np.ndarray) -> np.ndarray:
        """The draws z that sample() maps to `members` [k, n] (A^{-1} (x - m) / sigma): for members sampled elsewhere
        (another implementation's, whose eigenvectors may differ in sign) told to this update."""
        members = np.asarray(members, np.float64)
        if members.ndim != 2 or members.shape[1] != self.n:
            raise ValueError(f"members must be [k, {self.n}], got shape {members.shape}")
        return self._untransform((members - self.mean) / self.sigma)

    def tell(self, z: np.ndarray, fitness: np.ndarray, parents: int | None = None) -> None:
        """One generation's update from its draws [lambda, n] and their fitness [lambda] (maximised; see ranking()).
        parents: recombine the best `parents` members with parents_recombination()'s weights (CMA-ME's "filter"
        selection: as many parents as members entered the archive) instead of the default weights."""
        z = self.check_draws(z)
        fitness = np.asarray(fitness, np.float64)
        if fitness.shape != (self.population_size,):
            raise ValueError(f"fitness must be [{self.population_size}], got shape {fitness.shape}")
        with self._parents(parents):
            self._tell_ranked(z[ranking(fitness)])

    def _tell_ranked(self, z: np.ndarray) -> None:
        """The update from the draws ranked best first."""
        raise NotImplementedError

    def _move(self, z_w: np.ndarray) -> float:
        """Mean, step size and paths from z_w = sum_{i <= mu} w_i z_i (ranked draws); returns h_s."""
        self.generation += 1
        y_w = self._transform(z_w[None, :])[0]
        self.mean = self.mean + self.sigma * y_w
        coefficient = math.sqrt(self.c_s * (2 - self.c_s) * self.mu_eff)
        self.p_s = (1 - self.c_s) * self.p_s + coefficient * self._whitened(z_w[None, :])[0]
        norm = math.sqrt(float(np.sum(np.square(self.p_s))))  # not BLAS's dot: it stalls when other work holds the cores
        self.sigma *= math.exp(self.c_s / self.d_s * (norm / self.chi_n - 1))
        left = norm / math.sqrt(1 - (1 - self.c_s) ** (2 * (self.generation + 1)))
        h_s = 1.0 if left < (1.4 + 2 / (self.n + 1)) * self.chi_n else 0.0
        self.p_c = (1 - self.c_c) * self.p_c + h_s * math.sqrt(self.c_c * (2 - self.c_c) * self.mu_eff) * y_w
        return h_s

    @property
    def step_size(self) -> float:
        """sigma."""
        return self.sigma

    def _decay(self, h_s: float) -> float:
        """The factor C keeps: 1 + c_1 (1 - h_s) c_c (2 - c_c) - c_1 - c_mu sum w."""
        return 1 + self.c_1 * (1 - h_s) * self.c_c * (2 - self.c_c) - self.c_1 - self.c_mu * float(self.weights.sum())

    def condition(self) -> float:
        """The condition number of C (the ratio of its largest and smallest eigenvalue)."""
        raise NotImplementedError

    # -- state ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The evolving state (the parameters follow from n, lambda and the learning rates)."""
        return dict(
            mean=self.mean.copy(),
            sigma=self.sigma,
            p_s=self.p_s.copy(),
            p_c=self.p_c.copy(),
            covariance=self.covariance().copy(),
            generation=self.generation,
            repairs=self.repairs,
        )

    def covariance(self) -> np.ndarray:
        raise NotImplementedError

    def load(self, state: Mapping) -> None:
        """Restores state_dict() output (ValueError for wrong shapes or non-finite values)."""
        n = self.n
        vectors = {name: np.array(state[name], np.float64) for name in ("mean", "p_s", "p_c")}
        covariance = np.array(state["covariance"], np.float64)
        if any(v.shape != (n,) for v in vectors.values()) or covariance.shape != self.covariance().shape:
            raise ValueError(f"CMA state must hold vectors of [{n}] and a covariance of {self.covariance().shape}")
        sigma = float(state["sigma"])
        if not (all(np.isfinite(v).all() for v in vectors.values()) and np.isfinite(covariance).all() and sigma > 0):
            raise ValueError("CMA state holds non-finite values or a step size <= 0")
        self.mean, self.p_s, self.p_c = vectors["mean"], vectors["p_s"], vectors["p_c"]
        self.sigma, self.generation, self.repairs = sigma, int(state["generation"]), int(state["repairs"])
        self._set_covariance(covariance)
        self._decompose()

    def _set_covariance(self, covariance: np.ndarray) -> None:
        raise NotImplementedError


class CovarianceUpdate(CMAUpdate):
    """CMA-ES with a full covariance matrix and active (negative) weights: Hansen's tutorial (2016), its defaults."""

    def _weights(self) -> np.ndarray:
        lam, mu, n = self.population_size, self.mu, self.n
        raw = _positive_weights(lam, mu)
        positive, negative = raw[:mu], raw[mu:]
        mu_eff = positive.sum() ** 2 / (positive**2).sum()
        mu_eff_minus = negative.sum() ** 2 / (negative**2).sum() if negative.size else 0.0
        c_1 = 2 / ((n + 1.3) ** 2 + mu_eff)
        c_mu = min(1 - c_1, 2 * (mu_eff - 2 + 1 / mu_eff) / ((n + 2) ** 2 + mu_eff))
        alpha = min(1 + c_1 / c_mu, 1 + 2 * mu_eff_minus / (mu_eff + 2), (1 - c_1 - c_mu) / (n * c_mu)) if c_mu > 0 else 0
        return np.where(raw >= 0, raw / positive.sum(), alpha * raw / max(-negative.sum(), 1e-300))

    def _default_rates(self, mu_eff: float) -> dict[str, float]:
        n = self.n
        c_1 = 2 / ((n + 1.3) ** 2 + mu_eff)
        c_mu = min(1 - c_1, 2 * (mu_eff - 2 + 1 / mu_eff) / ((n + 2) ** 2 + mu_eff))
        c_c = (4 + mu_eff / n) / (n + 4 + 2 * mu_eff / n)
        return dict(c_1=c_1, c_mu=c_mu, c_c=c_c, **self._step_size_rates((mu_eff + 2) / (n + mu_eff + 5), mu_eff))

    def _init_covariance(self) -> None:
        self.C = np.eye(self.n)

    def _set_covariance(self, covariance: np.ndarray) -> None:
        self.C = covariance

    def covariance(self) -> np.ndarray:
        return self.C

    def _decompose(self) -> None:
        self.C = (self.C + self.C.T) / 2
        eigenvalues, self.B = np.linalg.eigh(self.C)
        low = eigenvalues < EIGENVALUE_FLOOR
        if low.any():
            self.repairs += int(low.sum())
            eigenvalues = np.maximum(eigenvalues, EIGENVALUE_FLOOR)
            self.C = (self.B * eigenvalues) @ self.B.T
        self.D = np.sqrt(eigenvalues)

    def _transform(self, z: np.ndarray) -> np.ndarray:
        return (z * self.D) @ self.B.T

    def _untransform(self, y: np.ndarray) -> np.ndarray:
        return (y @ self.B) / self.D

    def _whitened(self, z: np.ndarray) -> np.ndarray:
        return z @ self.B.T

    def _tell_ranked(self, z: np.ndarray) -> None:
        h_s = self._move(self.weights[: self.mu] @ z[: self.mu])
        y = self._transform(z)  # with the decomposition the draws were sampled with
        squared = np.einsum("ij,ij->i", z, z)
        w = np.where(self.weights >= 0, self.weights, self.weights * self.n / np.maximum(squared, 1e-300))
        rank_mu = (y * w[:, None]).T @ y
        self.C = self._decay(h_s) * self.C + self.c_1 * np.outer(self.p_c, self.p_c) + self.c_mu * rank_mu
        self._decompose()

    def scales(self) -> np.ndarray:
        return self.sigma * np.sqrt(np.diag(self.C))

    def axes(self) -> np.ndarray:
        """The standard deviations along the covariance's principal axes, sigma sqrt(eigenvalues), largest first."""
        return np.sort(self.sigma * self.D)[::-1]

    def condition(self) -> float:
        return float((self.D.max() / self.D.min()) ** 2)


class DiagonalUpdate(CMAUpdate):
    """sep-CMA-ES: a diagonal covariance, linear in n per member and per update (Ros & Hansen 2008)."""

    def _weights(self) -> np.ndarray:
        raw = _positive_weights(self.population_size, self.mu)[: self.mu]
        weights = np.zeros(self.population_size)
        weights[: self.mu] = raw / raw.sum()
        return weights

    def _default_rates(self, mu_eff: float) -> dict[str, float]:
        n = self.n
        c_cov = (
            (n + 2)
            / 3
            * (2 / (mu_eff * (n + math.sqrt(2)) ** 2) + (1 - 1 / mu_eff) * min(1, (2 * mu_eff - 1) / ((n + 2) ** 2 + mu_eff)))
        )
        c_cov = min(c_cov, 1.0)
        return dict(
            c_1=c_cov / mu_eff,
            c_mu=c_cov * (1 - 1 / mu_eff),
            c_c=4 / (n + 4),
            **self._step_size_rates((mu_eff + 2) / (n + mu_eff + 3), mu_eff),
        )

    def _init_covariance(self) -> None:
        self.C = np.ones(self.n)

    def _set_covariance(self, covariance: np.ndarray) -> None:
        self.C = covariance

    def covariance(self) -> np.ndarray:
        return self.C

    def _decompose(self) -> None:
        low = self.C < EIGENVALUE_FLOOR
        if low.any():
            self.repairs += int(low.sum())
            self.C = np.maximum(self.C, EIGENVALUE_FLOOR)
        self.D = np.sqrt(self.C)

    def _transform(self, z: np.ndarray) -> np.ndarray:
        return z * self.D

    def _untransform(self, y: np.ndarray) -> np.ndarray:
        return y / self.D

    def _whitened(self, z: np.ndarray) -> np.ndarray:
        return z

    def _tell_ranked(self, z: np.ndarray) -> None:
        positive = self.weights[: self.mu]
        self.tell_sums(positive @ z[: self.mu], positive @ np.square(z[: self.mu]))

    def ranked_weights(self, parents: int | None = None) -> np.ndarray:
        """The weights of the members ranked best first (zero past mu): what tell_sums' sums weigh (with `parents`,
        parents_recombination()'s)."""
        return self.weights if parents is None else self.parents_recombination(parents).weights

    def tell_sums(self, z_w: np.ndarray, zz_w: np.ndarray, parents: int | None = None) -> None:
        """The update from two weighted sums of the draws ranked best first, each [n]: z_w = sum_{i <= mu} w_i z_i
        and zz_w = sum_{i <= mu} w_i z_i^2 (w: ranked_weights(parents)); all it needs, so that a caller can stream
        the draws (a million parameters times hundreds of members does not fit in memory as one matrix)."""
        z_w, zz_w = np.asarray(z_w, np.float64), np.asarray(zz_w, np.float64)
        if z_w.shape != (self.n,) or zz_w.shape != (self.n,):
            raise ValueError(f"z_w and zz_w must be [{self.n}], got shapes {z_w.shape} and {zz_w.shape}")
        with self._parents(parents):
            rank_mu = self.C * zz_w  # sum_i w_i y_i^2 with y = D z, before the step changes nothing of D
            h_s = self._move(z_w)
            self.C = self._decay(h_s) * self.C + self.c_1 * self.p_c**2 + self.c_mu * rank_mu
            self._decompose()

    def scales(self) -> np.ndarray:
        return self.sigma * self.D

    def axes(self) -> np.ndarray:
        """A diagonal covariance's principal axes are the parameters: the scales, largest first."""
        return np.sort(self.scales())[::-1]

    def condition(self) -> float:
        return float(self.C.max() / self.C.min())
