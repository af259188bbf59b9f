"""CR-FM-NES (Nomura & Ono 2022): a natural evolution strategy whose covariance is diagonal plus rank one,
sigma^2 D (I + v v^T) D, linear in n in memory and time: the low-memory CMA-family member for a million
parameters.

A member is x = m + sigma D (z + (sqrt(1 + |v|^2) - 1) (vbar . z) vbar), vbar = v / |v|, with mirrored draws
(z and -z: lambda is even). It travels as a noise offset with a sign on the generation's base [3, n]: the mean,
the scales sigma D and the direction w = sqrt(sqrt(1 + |v|^2) - 1) vbar, so that x = m + scales (z + (w . z) w)
(genome.py, ParameterSpace.perturb): 12 bytes a member, 12 n bytes a generation, and one dot product over n to
decode. The update follows the authors' reference implementation (the `crfmnes` package, 1.0.0) step for step:
the evolution paths p_sigma and p_c, rank weights or distance weights (when |p_sigma| >= chi_n, the distribution
is moving), the natural-gradient updates of v and D with the rank-one term of p_c, det A normalised to 1, and the
step size's three learning rates (moving, stagnating, converging); lambda_F, the members with a finite return,
scales the rates as the reference's feasible count does. The update streams the ranked draws in chunks (two
passes), so a million parameters never make a [lambda, n] matrix.

Defaults: lambda = 4 + floor(3 ln n), rounded up to even (the reference takes lambda as given and requires it
even); v starts as a noise-table slice / sqrt(n) (the reference draws N(0, I / n)), D as ones.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from workbench.checks import check_int
from workbench.evolution.cma_es import CMAConfig
from workbench.evolution.cma_update import checked_start, default_population_size, expected_norm
from workbench.evolution.distribution_search import DistributionSearch

CHUNK = 16  # ranked draws per step of a streamed pass
AXES_DIMENSION = 2_000  # the principal axes are computed (a dense eigendecomposition) up to this many parameters


def distance_weight_constant(n: int) -> float:
    """h^-1 of the distance weights: the root of (1 + a^2) exp(a^2 / 2) / 0.24 - 10 - n (Newton, as the reference)."""

    def f(a: float) -> float:
        return (1.0 + a * a) * math.exp(a * a / 2.0) / 0.24 - 10.0 - n

    def slope(a: float) -> float:
        return (1.0 / 0.24) * a * math.exp(a * a / 2.0) * (3.0 + a * a)

    a = 6.0
    while abs(f(a)) > 1e-10:
        last, a = a, a - 0.5 * f(a) / slope(a)
        if abs(a - last) < 1e-16:
            break
    return a


def crfmnes_population_size(n: int) -> int:
    """The default lambda: 4 + floor(3 ln n) rounded up to even."""
    size = default_population_size(n)
    return size + size % 2


class CRFMNESUpdate:
    """The CR-FM-NES update in float64 (module docstring); a SearchDistribution with mirrored members."""

    kind = "CR-FM-NES"
    mirrored = True

    def __init__(self, mean: np.ndarray, sigma: float, population_size: int | None = None, v: np.ndarray | None = None) -> None:
        self.mean = checked_start(mean, sigma)
        n = self.n = self.mean.size
        self.population_size = crfmnes_population_size(n) if population_size is None else int(population_size)
        if self.population_size < 4 or self.population_size % 2:
            raise ValueError(
                f"population_size of CR-FM-NES must be even and at least 4 (mirrored draws), got {self.population_size}"
            )
        self.sigma = float(sigma)
        self.v = np.full(n, 1 / math.sqrt(n)) if v is None else np.array(v, np.float64)
        if self.v.shape != (n,) or not np.isfinite(self.v).all() or not self.v.any():
            raise ValueError(f"v must be a finite non-zero vector of {n} values")
        self.D = np.ones(n)
        self.pc, self.ps = np.zeros(n), np.zeros(n)
        self.generation, self.repairs = 0, 0
        lam = self.population_size
        self.rank_weights_hat = np.maximum(0.0, math.log(lam / 2 + 1) - np.log(np.arange(1, lam + 1)))
        self.rank_weights = self.rank_weights_hat / self.rank_weights_hat.sum() - 1 / lam
        self.mueff = 1 / float(np.sum((self.rank_weights + 1 / lam) ** 2))
        self.cs = (self.mueff + 2) / (n + self.mueff + 5)
        self.cc = (4 + self.mueff / n) / (n + 4 + 2 * self.mueff / n)
        self.c1_cma = 2 / ((n + 1.3) ** 2 + self.mueff)
        self.chi_n = expected_norm(n)
        self.h_inv = distance_weight_constant(n)

    # -- the learning rates of lambda_F feasible members (the reference's lambdas) ---------------------------
    def _alpha_dist(self, feasible: int) -> float:
        return self.h_inv * min(1.0, math.sqrt(self.population_size / self.n)) * math.sqrt(feasible / self.population_size)

    def _eta_sigma(self, ps_norm: float, feasible: int) -> float:
        n = self.n
        if ps_norm >= self.chi_n:
            return 1.0  # moving
        if ps_norm >= 0.1 * self.chi_n:
            return math.tanh((0.024 * feasible + 0.7 * n + 20) / (n + 12))  # stagnating
        return 2 * math.tanh((0.025 * feasible + 0.75 * n + 10) / (n + 4))  # converging

    def _c1(self, feasible: int) -> float:
        return self.c1_cma * (self.n - 5) / 6 * (feasible / self.population_size)

    def _eta_b(self, feasible: int) -> float:
        return math.tanh((min(0.02 * feasible, 3 * math.log(self.n)) + 5) / (0.23 * self.n + 25))

    # -- the distribution -----------------------------------------------------------------------------------
    def _rank_one(self) -> tuple[float, np.ndarray]:
        """(sqrt(1 + |v|^2) - 1, vbar)."""
        norm = float(np.linalg.norm(self.v))
        return math.sqrt(1 + norm * norm) - 1, self.v / norm

    @property
    def step_size(self) -> float:
        return self.sigma

    def scales(self) -> np.ndarray:
        """sqrt(diag(sigma^2 D (I + v v^T) D)) = sigma D sqrt(1 + v^2)."""
        return self.sigma * self.D * np.sqrt(1 + self.v * self.v)

    def condition(self) -> float:
        """An upper bound of the covariance's condition number: max(D)^2 (1 + |v|^2) / min(D)^2 (I + v v^T has
        eigenvalues 1 and 1 + |v|^2)."""
        with np.errstate(over="ignore"):  # D near its floor: infinite, which restarts the search
            return float((self.D.max() / self.D.min()) ** 2 * (1 + self.v @ self.v))

    def axes(self) -> np.ndarray | None:
        """The standard deviations along the principal axes of sigma^2 D (I + v v^T) D, largest first, up to
        AXES_DIMENSION parameters (an eigendecomposition of the n x n matrix); None above it."""
        if self.n > AXES_DIMENSION:
            return None
        dv = self.D * self.v
        eigenvalues = np.linalg.eigvalsh(np.diag(self.D * self.D) + np.outer(dv, dv))
        return self.sigma * np.sqrt(np.maximum(eigenvalues, 0.0))[::-1]

    def member_base(self) -> np.ndarray:
        """[mean, sigma D, w], w = sqrt(sqrt(1 + |v|^2) - 1) vbar: a member is mean + sigma D (z + (w . z) w)."""
        c, vbar = self._rank_one()
        return np.stack([self.mean, self.sigma * self.D, math.sqrt(c) * vbar])

    def _y(self, z: np.ndarray) -> np.ndarray:
        """y = z + c vbar (vbar . z) per row of z [k, n]."""
        c, vbar = self._rank_one()
        return z + c * np.outer(z @ vbar, vbar)

    def sample(self, z: np.ndarray) -> np.ndarray:
        return self.mean + self.sigma * self.D * self._y(np.asarray(z, np.float64))

    # -- the update -----------------------------------------------------------------------------------------
    def tell(self, z: np.ndarray, fitness: np.ndarray) -> None:
        """The update from the draws [lambda, n] and fitness [lambda] (maximised; non-finite last)."""
        from workbench.evolution.cma_update import ranking

        z = np.asarray(z, np.float64)
        if z.shape != (self.population_size, self.n):
            raise ValueError(f"draws must be [{self.population_size}, {self.n}], got shape {z.shape}")
        fitness = np.asarray(fitness, np.float64)
        order = ranking(fitness)
        self.tell_ranked(lambda rows: z[order[np.asarray(rows)]], int(np.isfinite(fitness).sum()))

    def tell_ranked(self, draws: Callable[[Sequence[int]], np.ndarray], feasible: int) -> None:
        """The update from the draws of the members ranked best first, read by draws(ranks) -> [len(ranks), n]
        (an array the next call may reuse); feasible: lambda_F, the members with a finite return."""
        lam, n = self.population_size, self.n
        feasible = max(1, int(feasible))
        chunks = [range(start, min(start + CHUNK, lam)) for start in range(0, lam, CHUNK)]
        # pass 1: the squared norms of the draws and the rank-weighted sum for p_sigma
        norms2, z_rank = np.empty(lam), np.zeros(n)
        for rows in chunks:
            z = draws(rows)
            norms2[rows.start : rows.stop] = np.einsum("ki,ki->k", z, z)
            z_rank += self.rank_weights[rows.start : rows.stop] @ z
        self.ps = (1 - self.cs) * self.ps + math.sqrt(self.cs * (2 - self.cs) * self.mueff) * z_rank
        ps_norm = float(np.linalg.norm(self.ps))
        distance = self.rank_weights_hat * np.exp(self._alpha_dist(feasible) * np.sqrt(norms2))
        weights = distance / distance.sum() - 1 / lam if ps_norm >= self.chi_n else self.rank_weights
        eta_sigma = self._eta_sigma(ps_norm, feasible)
        # pass 2: the weighted sums the mean, p_c and the natural gradient need. The reference's s and t columns
        # are affine in each column's y*y, (vbar . y) y, (vbar . y)^2 and 1 (_RankOneGeometry.sums), so their
        # weighted sums follow from weighted sums of z, z*z and (vbar . z) z: three [k, n] passes a chunk.
        c, vbar = self._rank_one()
        z_w, zz_w, za_w, aa_w = np.zeros(n), np.zeros(n), np.zeros(n), 0.0
        squares = np.empty((CHUNK, n))
        for rows in chunks:
            z = draws(rows)
            w = weights[rows.start : rows.stop]
            a = z @ vbar
            z_w += w @ z
            zz_w += w @ np.multiply(z, z, out=squares[: len(z)])
            za_w += (w * a) @ z
            aa_w += float(w @ (a * a))
        grow = 1 + c * float(vbar @ vbar)  # vbar . y = grow (vbar . z)
        y_w = z_w + c * float(vbar @ z_w) * vbar
        geometry = _RankOneGeometry(self.v)
        s_w, t_w = geometry.sums(
            zz_w + 2 * c * vbar * za_w + c * c * aa_w * vbar * vbar,  # sum w y*y
            grow * (za_w + c * aa_w * vbar),  # sum w (vbar . y) y
            grow * grow * aa_w,  # sum w (vbar . y)^2
            float(weights.sum()),
        )
        step = self.sigma * self.D * y_w  # sum_k w_k (x_k - m)
        self.pc = (1 - self.cc) * self.pc + math.sqrt(self.cc * (2 - self.cc) * self.mueff) * step / self.sigma
        self.mean = self.mean + step  # eta_m = 1
        e = self.pc / self.D  # the reference's extra column
        e_a = float(geometry.vbar @ e)
        s_pc, t_pc = geometry.sums(e * e, e_a * e, e_a * e_a, 1.0)
        eta_b, c1 = self._eta_b(feasible), self._c1(feasible)
        s_w, t_w = eta_b * s_w + c1 * s_pc, eta_b * t_w + c1 * t_pc
        self.v = self.v + t_w / geometry.norm
        self.D = self.D + s_w * self.D
        if not (self.D > 0).all():  # the natural gradient stepped past zero: keep the scale, count it
            self.repairs += int((self.D <= 0).sum())
            self.D = np.where(self.D > 0, self.D, 1e-300)
        self.D = self.D / math.exp(np.sum(np.log(self.D)) / n + math.log(1 + self.v @ self.v) / (2 * n))
        g_sigma = float(np.sum((norms2 - n) * weights)) / n
        self.sigma = self.sigma * math.exp(eta_sigma / 2 * g_sigma)
        self.generation += 1

    # -- state ----------------------------------------------------------------------------------------------
    FIELDS = ("mean", "v", "D", "pc", "ps")

    def state_dict(self) -> dict:
        state = {name: getattr(self, name).copy() for name in self.FIELDS}
        return dict(state, sigma=self.sigma, generation=self.generation, repairs=self.repairs)

    def load(self, state: Mapping) -> None:
        arrays = {name: np.array(state[name], np.float64) for name in self.FIELDS}
        if any(a.shape != (self.n,) or not np.isfinite(a).all() for a in arrays.values()):
            raise ValueError(f"{self.kind} state must hold finite {', '.join(self.FIELDS)} of [{self.n}]")
        sigma = float(state["sigma"])
        if not (math.isfinite(sigma) and sigma > 0) or not (arrays["D"] > 0).all() or not arrays["v"].any():
            raise ValueError(f"{self.kind} state holds sigma <= 0, D <= 0 or v = 0")
        for name, value in arrays.items():
            setattr(self, name, value)
        self.sigma, self.generation, self.repairs = sigma, int(state["generation"]), int(state["repairs"])


class _RankOneGeometry:
    """What the natural gradient of D and v needs of the current v (the reference's normv, vbar, gammav, alphavd,
    b, H); s_t(e) gives the s and t rows of columns e [k, n] (the reference's exY columns)."""

    def __init__(self, v: np.ndarray) -> None:
        self.norm = float(np.linalg.norm(v))
        self.norm2 = self.norm**2
        norm4 = self.norm2**2
        self.vbar = v / self.norm
        self.gamma = 1 + self.norm2
        self.vbar2 = self.vbar * self.vbar
        self.alpha = min(1.0, math.sqrt(norm4 + (2 * self.gamma - math.sqrt(self.gamma)) / self.vbar2.max()) / (2 + self.norm2))
        self.b = -(1 - self.alpha**2) * norm4 / self.gamma + 2 * self.alpha**2
        self.inv_h = 1 / (2 - (self.b + 2 * self.alpha**2) * self.vbar2)
        self.inv_h_vbar2 = self.inv_h * self.vbar2
        self.b_term = self.b / (1 + self.b * float(self.vbar2 @ self.inv_h_vbar2))

    def sums(self, ee: np.ndarray, ae: np.ndarray, aa: float, weight: float) -> tuple[np.ndarray, np.ndarray]:
        """The weighted sums of the reference's s and t columns over columns e with weights w_k, from
        ee = sum w e*e, ae = sum w (vbar . e) e, aa = sum w (vbar . e)^2 and weight = sum w. Per column (a =
        vbar . e, g = 1 + |v|^2, N = |v|^2): t0 = a e - vbar (a^2 + g) / 2; s1 = e*e - N / g a (e*vbar) - 1;
        s2 = s1 - alpha / g ((2 + N) t0*vbar - N vbar^2 (vbar . t0)); s = s2 / H - b' p (p . s2) with p = vbar^2 / H;
        t = t0 - alpha ((2 + N) s*vbar - vbar (vbar^2 . s)): all affine in (e*e, a e, a^2, 1), so the sums are."""
        vbar, vbar2, g, norm2, alpha = self.vbar, self.vbar2, self.gamma, self.norm2, self.alpha
        unit = float(vbar @ vbar)  # 1 up to rounding; kept where the reference's products keep it
        on_vbar2 = alpha / g * ((2 + norm2) * (aa + g * weight) / 2 + norm2 * (aa - unit * (aa + g * weight) / 2))
        s2 = ee - (norm2 + alpha * (2 + norm2)) / g * vbar * ae - weight + on_vbar2 * vbar2
        s = s2 * self.inv_h - self.b_term * self.inv_h_vbar2 * float(self.inv_h_vbar2 @ s2)
        t = ae - vbar * (aa + g * weight) / 2 - alpha * ((2 + norm2) * (s * vbar) - vbar * float(vbar2 @ s))
        return s, t


@dataclasses.dataclass(frozen=True)
class CRFMNESConfig(CMAConfig):
    """CR-FM-NES's hyperparameters: CMAConfig's (population_size even: mirrored draws)."""

    def validated(self) -> CRFMNESConfig:
        super().validated()
        if self.population_size is not None:
            check_int("population_size", self.population_size, 4)
            if self.population_size % 2:
                raise ValueError(f"population_size of CR-FM-NES must be even (mirrored draws), got {self.population_size}")
        return self


class CRFMNES(DistributionSearch):
    """CR-FM-NES on a ParameterSpace (module docstring)."""

    kind = "CRFMNES"
    config_class = CRFMNESConfig

    def _start(self, mean, population_size, restart=False):
        # v starts as a noise slice / sqrt(n), N(0, I / n), drawn here (a start or a restart) and not in
        # _new_update, which a resume and a live rebuild also call before loading the saved v
        n = self.space.num_parameters
        self._initial_v = self.space.noise.slice(self.space.sample_offset(self.rng), n).astype(np.float64) / math.sqrt(n)
        super()._start(mean, population_size, restart)

    def _new_update(self, mean, population_size):
        if population_size is not None and population_size % 2:
            population_size += 1  # not reached from a checked config; kept even for the mirrored draws
        return CRFMNESUpdate(mean, self.config.sigma_init, population_size, getattr(self, "_initial_v", None))
