"""N copies of one Gymnasium MuJoCo env stepped as a batch, with what a reward needs.

Each copy is a real Gymnasium env (its model, data, seeding and `reset`); a step runs the physics
of every copy and computes observations, info and termination for all of them at once
(`kernels`), or falls back to each copy's own `env.step`. Time limits are the env spec's.

A step returns the transitions as columns, the layout the sandbox scores without rebuilding them
(`SandboxRewards.score_columns`): the observation before, the action, the observation after
(before any reset), and info with the env's fields, "qpos"/"qvel" copies and, when asked for, the
foot and knee readings. Finished copies reset at once; their next observation is the new
episode's first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium.envs.mujoco.mujoco_env import MujocoEnv

from activities.behaviours.sensors import BodySensors
from activities.envs.quiet import quiet_mujoco
from activities.training.batched.kernels import Kernel, Stepped, kernel_for
from activities.training.batched.physics import PhysicsStepper
from activities.training.batched.shaping import Shaping, height_index, height_offset


@dataclass
class Transitions:
    """One batched step as the reward sees it, row i for env i."""

    obs: np.ndarray  # the observation before the step
    action: np.ndarray  # as applied (clipped to the action space)
    next_obs: np.ndarray  # after the step, before any reset
    info: dict[str, np.ndarray]  # the env's fields, "qpos", "qvel" and readings, as columns
    start: np.ndarray  # the step is its episode's first
    env_reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    extra: dict[str, Any] = field(default_factory=dict)


class BatchEnvs:
    """`n` copies of `env_id`, seeded seed, seed+1, ... at their first reset."""

    def __init__(
        self,
        env_id: str,
        n: int,
        seed: int,
        *,
        env_kwargs: dict[str, Any] | None = None,
        sensors: bool = False,
        generic: bool = False,
        threads: int = 1,
    ) -> None:
        quiet_mujoco()
        made = [gym.make(env_id, **(env_kwargs or {})) for _ in range(n)]
        spec = made[0].spec
        self.max_steps = int(spec.max_episode_steps or 0) if spec is not None else 0
        self.envs = [cast(MujocoEnv, e.unwrapped) for e in made]
        # One model for every copy (they were made alike): n compiled copies of it only crowd
        # the caches the physics runs from. Each copy keeps its own state (MjData).
        for env in self.envs[1:]:
            env.model = self.envs[0].model
            env.data = mujoco.MjData(env.model)
            # The renderer held the copy's own model and state: let them go (MuJoCo reserves
            # about 14 MB of address space for each state, Humanoid's 128 copies 1.9 GB).
            env.mujoco_renderer.model, env.mujoco_renderer.data = env.model, env.data
        self.env_id = env_id
        self.n = n
        self.observation_space = made[0].observation_space
        self.action_space = cast(gym.spaces.Box, made[0].action_space)
        self.kernel: Kernel | None = None if generic else kernel_for(env_id, self.envs[0])
        # Physics on `threads` threads: a kernel's mj_step calls, or each env's own env.step.
        self.stepper = PhysicsStepper(self.envs, threads)
        found = BodySensors(env_id, self.envs[0].model) if sensors else None
        self.sensors = None if found is None or found.empty else found
        self._seed = seed
        # Shaping per copy (`shape`): reset noise factor, episode limit, torso height floor.
        self.init_noise = np.ones(n)
        self.limits = np.full(n, self.max_steps if self.max_steps else np.iinfo(np.int64).max)
        self.min_height = np.full(n, -np.inf)
        self.height = (height_index(env_id), height_offset(env_id))
        self._lengths = np.zeros(n, dtype=np.int64)
        self._start = np.ones(n, dtype=bool)
        self.obs = np.zeros((n, *(self.observation_space.shape or ())))

    def shape(self, envs: slice, shaping: Shaping) -> None:
        """Apply a candidate's initial-state and termination shaping to copies `envs`."""
        self.init_noise[envs] = shaping.init_noise
        if shaping.max_episode_steps is not None:
            self.limits[envs] = shaping.max_episode_steps
        if shaping.min_height is not None:
            self.min_height[envs] = shaping.min_height
        if shaping.healthy_z_range is not None:
            # env.step reads each copy's own band; a kernel reads one band per copy.
            for env in self.envs[envs]:
                cast(Any, env)._healthy_z_range = shaping.healthy_z_range
            if self.kernel is not None and hasattr(self.kernel, "z_range"):
                low, high = (np.full(self.n, bound, dtype=float) for bound in self.kernel.z_range)
                low[envs], high[envs] = shaping.healthy_z_range
                cast(Any, self.kernel).z_range = (low, high)

    def reset(self, seeds: list[int] | None = None) -> np.ndarray:
        """Every copy's first observation, seeded with `seeds` (default seed, seed+1, ...)."""
        seeds = seeds if seeds is not None else [self._seed + i for i in range(self.n)]
        self.obs = np.array([self._reset_one(i, s) for i, s in enumerate(seeds)])
        self._lengths[:] = 0
        self._start[:] = True
        return self.obs

    def step(self, actions: np.ndarray) -> Transitions:
        """Step every copy with `actions` (clipped to the action space), reset the finished ones;
        `self.obs` becomes the observation each copy acts on next."""
        space = self.action_space
        actions = np.clip(np.asarray(actions, dtype=np.float64), space.low, space.high)
        if self.kernel is not None:
            stepped, qpos, qvel = self._kernel_step(self.kernel, actions)
        else:
            stepped = self._generic_step(actions)
            qpos = np.array([e.data.qpos for e in self.envs])
            qvel = np.array([e.data.qvel for e in self.envs])
        info = stepped.info
        info["qpos"], info["qvel"] = qpos, qvel  # the kernel's gathered state, not a second copy
        if self.sensors is not None:
            readings = [self.sensors.read(e.data) for e in self.envs]
            for key in readings[0]:
                info[key] = np.array([r[key] for r in readings])
        self._lengths += 1
        index, offset = self.height
        if index is not None and np.isfinite(self.min_height).any():
            fallen = info["qpos"][:, index] + offset < self.min_height
            stepped.terminated = stepped.terminated | fallen
        truncated = (self._lengths >= self.limits) & ~stepped.terminated
        out = Transitions(
            obs=self.obs,
            action=actions,
            next_obs=stepped.obs,
            info=info,
            start=self._start.copy(),
            env_reward=stepped.reward,
            terminated=stepped.terminated,
            truncated=truncated,
        )
        self._start[:] = False
        self.obs = stepped.obs.copy()
        for i in np.flatnonzero(stepped.terminated | truncated):
            self.obs[i] = self._reset_one(int(i))
            self._lengths[i] = 0
            self._start[i] = True
        return out

    def _reset_one(self, i: int, seed: int | None = None) -> np.ndarray:
        """Copy i's env reset (its own noise), the noise scaled by its init_noise factor."""
        env = self.envs[i]
        obs = env.reset(seed=seed)[0]
        factor = self.init_noise[i]
        if factor != 1.0:
            qpos = env.init_qpos + (env.data.qpos - env.init_qpos) * factor
            qvel = env.init_qvel + (env.data.qvel - env.init_qvel) * factor
            env.set_state(qpos, qvel)
            obs = cast(Any, env)._get_obs()  # every Gymnasium MuJoCo env has one
        return obs

    def _kernel_step(
        self, kernel: Kernel, actions: np.ndarray
    ) -> tuple[Stepped, np.ndarray, np.ndarray]:
        datas = [e.data for e in self.envs]
        before = kernel.before(np.array([d.qpos for d in datas]), datas)
        qpos, qvel = self.stepper.step(actions, kernel.needs_cfrc)
        return kernel.after(qpos, qvel, datas, actions, before), qpos, qvel

    def _generic_step(self, actions: np.ndarray) -> Stepped:
        envs = self.envs

        def step(part: slice) -> list[tuple[Any, ...]]:
            return [envs[i].step(actions[i]) for i in range(part.start, part.stop)]

        rows = self.stepper.map_slices(step)
        infos = [r[4] for r in rows]
        info = {
            key: np.array([i[key] for i in infos], dtype=np.float64)
            for key in infos[0]
            if all(key in i for i in infos)
        }
        return Stepped(
            obs=np.array([r[0] for r in rows]),
            info=info,
            reward=np.array([float(r[1]) for r in rows]),
            terminated=np.array([bool(r[2]) for r in rows]),
        )

    def close(self) -> None:
        self.stepper.close()
        for e in self.envs:
            e.close()
