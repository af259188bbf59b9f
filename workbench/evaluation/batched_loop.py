"""BatchedLoopEvaluator: evaluation requests on an EnvBatch and a PopulationModel, in one plain loop.

Every model slot runs one episode at a time with the weights of its genome;
all running episodes step together (one inference call and one environment
step per loop iteration), and when an episode ends its slot takes the next
pending (request, episode) at once. Episode e of request r starts from seed
episode_seed(seed, r, e), so results do not depend on the slot count or on
the order in which episodes run. Synchronous and simple: the reference for the
pipelined evaluator, and quick enough for CartPole-sized problems.
"""
import collections

import numpy as np
import tensorflow as tf

from workbench.envs.batch import EnvBatch
from workbench.envs.rng import episode_seed
from workbench.evaluation.behaviour import behaviour_function, checked_behaviour
from workbench.evolution.genome import GenomeDecoder
from workbench.evolution.strategy import EvaluationRequest, EvaluationResult
from workbench.models.population_model import PopulationModel


class BatchedLoopEvaluator:
    """Runs requests on `env` (an EnvBatch) with `model` (a PopulationModel) and `decoder`.

    Uses min(env.batch_size, model.slots) slots. max_steps caps an episode's
    environment steps (None: the environment's own limit). behaviour: see
    workbench.evaluation.behaviour; computed for requests that ask for it.
    """

    def __init__(self, env, model, decoder, behaviour=None, max_steps=None):
        if not isinstance(env, EnvBatch):
            raise TypeError(f"env must be an EnvBatch, got {type(env).__name__}")
        if not isinstance(model, PopulationModel):
            raise TypeError(f"model must be a PopulationModel, got {type(model).__name__}")
        if not isinstance(decoder, GenomeDecoder):
            raise TypeError(f"decoder must be a GenomeDecoder, got {type(decoder).__name__}")
        if tuple(env.observation_shape) != model.input_shape:
            raise ValueError(f"env observations {tuple(env.observation_shape)} do not fit the model input {model.input_shape}")
        if env.num_actions != model.num_actions:
            raise ValueError(f"env has {env.num_actions} actions, the model {model.num_actions} outputs")
        if decoder.num_parameters != model.num_parameters:
            raise ValueError(f"decoder makes {decoder.num_parameters} parameters, the model has {model.num_parameters}")
        if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1):
            raise ValueError(f"max_steps must be a positive integer or None, got {max_steps!r}")
        self.env, self.model, self.decoder = env, model, decoder
        self.behaviour = behaviour_function(behaviour)
        self.max_steps = max_steps
        self.slots = min(env.batch_size, model.slots)
        dtype = tf.as_dtype(env.observation_dtype)
        self._act = tf.function(model.act, input_signature=[
            tf.TensorSpec((None,) + model.input_shape, dtype), tf.TensorSpec((None,), tf.int32)])
        self.steps = 0  # environment steps taken since creation

    def evaluate(self, requests, seed=0, bases=None):
        """[EvaluationResult] in request order. bases: {key: weights} the genomes may start from."""
        requests = list(requests)
        if bases is not None:
            for key, weights in bases.items():
                self.decoder.add_base(key, weights)
            self.decoder.retain_bases(bases)  # the centres of past generations are no longer needed
        for k, request in enumerate(requests):
            if not isinstance(request, EvaluationRequest):
                raise TypeError(f"requests[{k}] must be an EvaluationRequest, got {type(request).__name__}")
            self.decoder.check(request.genome)
        if any(r.behaviour for r in requests) and self.behaviour is None:
            raise ValueError("requests ask for behaviour characterisations: give the evaluator a behaviour function")
        pending = collections.deque((r, e) for r, request in enumerate(requests) for e in range(request.episodes))
        returns = [np.zeros(request.episodes) for request in requests]
        behaviours = [[None] * request.episodes if request.behaviour else None for request in requests]
        jobs = [None] * self.slots
        episode_steps = np.zeros(self.slots, np.int64)
        dimensions = [None]

        def finish(slot):
            r, e = jobs[slot]
            if behaviours[r] is not None:
                vector = checked_behaviour(self.behaviour(self.env, slot), dimensions[0], f"request {r}, episode {e}")
                dimensions[0] = vector.size
                behaviours[r][e] = vector
            jobs[slot] = None

        def refill():
            free = [s for s in range(self.slots) if jobs[s] is None]
            started = []
            for slot in free:
                if not pending:
                    break
                jobs[slot] = pending.popleft()
                started.append(slot)
            if not started:
                return
            self.model.set_slots(started, np.stack([self.decoder.decode(requests[jobs[s][0]].genome) for s in started]))
            seeds = [episode_seed(seed, *jobs[s]) for s in started]
            self.env.reset(started, seeds)
            episode_steps[started] = 0
            for slot, done in zip(started, self.env.done(started)):
                if done:  # ended during its reset (e.g. a frame cap of zero)
                    finish(slot)

        refill()
        while any(job is not None for job in jobs) or pending:
            active = np.array([s for s in range(self.slots) if jobs[s] is not None], np.int32)
            if active.size == 0:
                refill()
                continue
            actions = self._act(self.env.observation(active), active).numpy()
            rewards, done = self.env.step(active, actions)
            self.steps += active.size
            episode_steps[active] += 1
            for slot, reward, ended in zip(active, rewards, done):
                r, e = jobs[slot]
                returns[r][e] += reward
                if ended or (self.max_steps is not None and episode_steps[slot] >= self.max_steps):
                    finish(slot)
            refill()
        return [EvaluationResult(returns[r], None if behaviours[r] is None else np.stack(behaviours[r]))
                for r in range(len(requests))]
