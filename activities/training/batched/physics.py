"""MuJoCo steps for many envs on several threads of one process.

`mj_step` releases the GIL, so threads stepping disjoint envs run the physics on as many cores
as there are threads; the Python around each call (setting the controls, reading the state
back) is a few per cent of a step. Each thread owns a contiguous slice of the envs and writes
their new qpos and qvel into shared arrays, so the caller gets the stacked state without a
second pass over the envs.

Threads do not always pay: handing a step to them costs tens of microseconds, and a few cheap
envs (a session's 16 HalfCheetahs: about 0.5 ms of physics a step) stepped slower on two
threads than on one beside the trainer's own torch threads. So the stepper measures both ways
over its first steps (TRIAL_STEPS each, after WARM_STEPS) and keeps the faster.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import mujoco
import numpy as np
from gymnasium.envs.mujoco.mujoco_env import MujocoEnv

T = TypeVar("T")
WARM_STEPS = 5
TRIAL_STEPS = 20


class PhysicsStepper:
    """`do_simulation` for every env, over `threads` threads (1: in the calling thread)."""

    def __init__(self, envs: Sequence[MujocoEnv], threads: int = 1) -> None:
        self.envs = list(envs)
        model = self.envs[0].model
        self.qpos = np.zeros((len(self.envs), model.nq))
        self.qvel = np.zeros((len(self.envs), model.nv))
        self.frame_skip = int(self.envs[0].frame_skip)
        self.seconds = 0.0  # wall time in `step`
        self._pool: ThreadPoolExecutor | None = None
        self.threads = 0
        self.set_threads(threads)

    def set_threads(self, threads: int) -> None:
        """Step on `threads` threads from now on (the worker re-shares its cores as runs start
        and end), timing both ways again when there is more than one."""
        n = len(self.envs)
        threads = max(1, min(int(threads), n))
        if threads == self.threads:
            return
        self.close()
        self.threads = threads
        bounds = np.linspace(0, n, threads + 1).astype(int)
        self.slices = [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        self._pool = ThreadPoolExecutor(threads) if threads > 1 else None
        # The trial: seconds on the threads and in the calling thread, then the choice.
        self._calls = 0
        self._trial = {"threads": 0.0, "alone": 0.0}
        self.chosen: int | None = 1 if self._pool is None else None

    def step(self, actions: np.ndarray, cfrc: bool) -> tuple[np.ndarray, np.ndarray]:
        """Step every env with its row of `actions`; the stacked (qpos, qvel) after. Contact
        forces (`mj_rnePostConstraint`) only when something reads them."""
        self.map_slices(lambda part: self._step_slice(part, actions, cfrc))
        return self.qpos.copy(), self.qvel.copy()

    def map_slices(self, fn: Callable[[slice], list[T]]) -> list[T]:
        """fn over each thread's slice of the envs (or over all of them in the calling thread,
        when that measured faster); the results in env order. For envs stepped through their
        own `env.step` (no kernel) too: its physics still releases the GIL, so heavy bodies
        (Humanoid) step on every thread."""
        started = time.perf_counter()
        threaded = self._use_threads()
        if not threaded or self._pool is None:
            out = fn(slice(0, len(self.envs)))
        else:
            parts = [self._pool.submit(fn, s) for s in self.slices]
            out = [row for part in parts for row in part.result()]
        spent = time.perf_counter() - started
        self.seconds += spent
        self._record(threaded, spent)
        return out

    def _use_threads(self) -> bool:
        """Threads during the warm-up and the first half of the trial, then as chosen."""
        if self.chosen is not None:
            return self.chosen > 1
        return self._calls < WARM_STEPS + TRIAL_STEPS

    def _record(self, threaded: bool, spent: float) -> None:
        if self.chosen is not None:
            return
        self._calls += 1
        if self._calls > WARM_STEPS:
            self._trial["threads" if threaded else "alone"] += spent
        if self._calls >= WARM_STEPS + 2 * TRIAL_STEPS:
            faster = self._trial["threads"] < self._trial["alone"]
            self.chosen = self.threads if faster else 1

    def _step_slice(self, part: slice, actions: np.ndarray, cfrc: bool) -> list[None]:
        """Step the envs of `part`, their state into the shared arrays (nothing to return)."""
        qpos, qvel, nstep = self.qpos, self.qvel, self.frame_skip
        for i in range(part.start, part.stop):
            env = self.envs[i]
            model, data = env.model, env.data
            data.ctrl[:] = actions[i]
            mujoco.mj_step(model, data, nstep=nstep)
            if cfrc:
                mujoco.mj_rnePostConstraint(model, data)
            qpos[i] = data.qpos
            qvel[i] = data.qvel
        return []

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
