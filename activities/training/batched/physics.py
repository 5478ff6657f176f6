"""MuJoCo steps for many envs on several threads of one process.

`mj_step` releases the GIL, so threads stepping disjoint envs run the physics on as many cores
as there are threads; the Python around each call (setting the controls, reading the state
back) is a few per cent of a step. Each thread owns a contiguous slice of the envs and writes
their new qpos and qvel into shared arrays, so the caller gets the stacked state without a
second pass over the envs.
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


class PhysicsStepper:
    """`do_simulation` for every env, over `threads` threads (1: in the calling thread)."""

    def __init__(self, envs: Sequence[MujocoEnv], threads: int = 1) -> None:
        self.envs = list(envs)
        n = len(self.envs)
        self.threads = max(1, min(int(threads), n))
        bounds = np.linspace(0, n, self.threads + 1).astype(int)
        self.slices = [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        model = self.envs[0].model
        self.qpos = np.zeros((n, model.nq))
        self.qvel = np.zeros((n, model.nv))
        self.frame_skip = int(self.envs[0].frame_skip)
        self._pool = ThreadPoolExecutor(self.threads) if self.threads > 1 else None
        self.seconds = 0.0  # wall time in `step`

    def step(self, actions: np.ndarray, cfrc: bool) -> tuple[np.ndarray, np.ndarray]:
        """Step every env with its row of `actions`; the stacked (qpos, qvel) after. Contact
        forces (`mj_rnePostConstraint`) only when something reads them."""
        started = time.perf_counter()
        if self._pool is None:
            self._step_slice(self.slices[0], actions, cfrc)
        else:
            jobs = [self._pool.submit(self._step_slice, s, actions, cfrc) for s in self.slices]
            for job in jobs:
                job.result()  # re-raises a worker's error here
        self.seconds += time.perf_counter() - started
        return self.qpos.copy(), self.qvel.copy()

    def map_slices(self, fn: Callable[[slice], list[T]]) -> list[T]:
        """fn over each thread's slice of the envs, on the threads; the results in env order.
        For envs stepped through their own `env.step` (no kernel): its physics still releases
        the GIL, so heavy bodies (Humanoid) step on every thread."""
        started = time.perf_counter()
        if self._pool is None:
            out = fn(self.slices[0])
        else:
            parts = [self._pool.submit(fn, s) for s in self.slices]
            out = [row for part in parts for row in part.result()]
        self.seconds += time.perf_counter() - started
        return out

    def _step_slice(self, part: slice, actions: np.ndarray, cfrc: bool) -> None:
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

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
