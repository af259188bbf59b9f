"""A toy environment family, added the way a new one is: a batch class and one registration, in one file.

"toy-walk": a point on a line starts near 0 and should reach the goal at +3; three actions (left, stay, right),
reward minus the distance to the goal after each step, observations (position, goal) / 10; episodes end at the
goal or at the cap. Pure Python, seeded per episode as the contract asks. The family tests run the registry,
the resolver, the contract checker, the trainer and the dashboard's data path on it (registered only while
they do).
"""

import contextlib

import numpy as np

from workbench.envs import SCREEN, EnvBatch, EnvFamily, register_env_family, unregister_env_family

NAME = "toy"
NAMES = ("toy-walk", "toy-walk-v0")
CAP = 40  # the family's default episode cap
GOAL = 3.0


class ToyWalkBatch(EnvBatch):
    observation_shape = (2,)
    observation_dtype = np.float32
    num_actions = 3

    def __init__(self, name, batch_size, *, seed=0, max_episode_frames=None):
        super().__init__(batch_size, seed)
        if name not in NAMES:
            raise ValueError(f"toy-walk batch: unknown name {name!r}")
        self.cap = CAP if max_episode_frames is None else int(max_episode_frames)
        self.position = np.zeros(batch_size, np.float32)
        self.steps = np.zeros(batch_size, np.int64)

    def __repr__(self):
        return f"ToyWalkBatch({self.batch_size})"

    @property
    def capabilities(self):
        return frozenset({SCREEN})

    def _reset(self, indices, seeds):
        for i, seed in zip(indices, seeds):
            self.position[i] = np.random.default_rng(int(seed) % (1 << 63)).uniform(-1, 1)
        self.steps[indices] = 0

    def _step(self, indices, actions):
        self.position[indices] += np.asarray(actions, np.float32) - 1
        self.steps[indices] += 1
        distance = np.abs(GOAL - self.position[indices])
        return (-distance).astype(np.float32), (distance < 0.5) | (self.steps[indices] >= self.cap)

    def _observation(self, indices):
        return np.stack([self.position[indices], np.full(len(indices), GOAL, np.float32)], axis=1) / 10

    def episode_frames(self, indices=None):
        return self.steps[self.check_indices(indices)].copy()

    def screen(self, indices=None):
        """A 1 x 21 strip with the point lit: x from -10 to 10."""
        indices = self.check_indices(indices)
        frames = np.zeros((len(indices), 1, 21, 3), np.uint8)
        for k, i in enumerate(indices):
            frames[k, 0, int(np.clip(round(self.position[i]) + 10, 0, 20))] = 255
        return frames


def _presets(name, env, preset_group, cores):
    """Only a tutorial preset, and only for the GA group (KeyError otherwise, as the registry expects)."""
    table = {"tutorial": {"ga": dict(population_size=8, truncation=3, elite_candidates=2, elite_episodes=2)}}
    return dict(hyperparameters=dict(table[name][preset_group]), subpopulations=1, slots=4)


FAMILY = EnvFamily(
    name=NAME,
    description="a point walking to a goal (toy-walk)",
    find=lambda name: name if name in NAMES else None,
    names=lambda: NAMES,
    batch=ToyWalkBatch,
    models=("mlp", "linear"),
    vector_observations=True,
    run_defaults=lambda env, group: dict(
        model="linear" if group == "ars" else "mlp",
        model_options=dict(hidden_sizes=[4]) if group != "ars" else {},
        observation_normalization=None,
        max_episode_frames=CAP,
    ),
    behaviour="final_observation",
    presets=_presets,
)


@contextlib.contextmanager
def toy_family_registered():
    register_env_family(FAMILY)
    try:
        yield NAME
    finally:
        unregister_env_family(NAME)
