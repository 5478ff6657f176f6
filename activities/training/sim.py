"""Environments for the child: quiet MuJoCo, the session reward, fast headless rendering."""

from __future__ import annotations

from typing import Any, cast, overload

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium.envs.mujoco.mujoco_env import MujocoEnv

from activities.envs.quiet import quiet_mujoco
from activities.training.phase_clock import PhaseClock
from activities.training.reward_runtime import LoadedReward, Rewards, RewardWrapper

# Half-size of the drawn floor in evaluation videos: 1000 steps at 8 m/s stay on it.
FLOOR_HALF_SIZE = 500.0
# Envs whose model has a "track" camera (mode trackcom) that follows the robot.
TRACKING_CAMERA = frozenset(
    ("HalfCheetah-v5", "Ant-v5", "Hopper-v5", "Walker2d-v5", "Humanoid-v5")
    + ("HumanoidStandup-v5", "Swimmer-v5")
)


@overload
def make_env(
    env_id: str,
    reward: Rewards | LoadedReward,
    env_kwargs: dict[str, Any] | None = None,
    render_size: int | None = None,
) -> RewardWrapper: ...


@overload
def make_env(
    env_id: str,
    reward: None,
    env_kwargs: dict[str, Any] | None = None,
    render_size: int | None = None,
) -> gym.Env: ...


def make_env(
    env_id: str,
    reward: Rewards | LoadedReward | None,
    env_kwargs: dict[str, Any] | None = None,
    render_size: int | None = None,
) -> gym.Env:
    """An env for the child: MuJoCo quiet, the session's `reward` wrapped in when given, and
    fast headless rendering at `render_size` px when asked."""
    quiet_mujoco()
    kwargs = dict(env_kwargs or {})
    if reward is not None:
        kwargs.update(_termination(env_id, reward))
    if render_size:
        kwargs.update(render_mode="rgb_array", width=render_size, height=render_size)
        if env_id in TRACKING_CAMERA and "camera_id" not in kwargs:
            # Gymnasium 1.4's default free camera stays where the episode starts: a running
            # robot leaves the frame within seconds. The model's "track" camera follows it.
            kwargs.setdefault("camera_name", "track")
    env = gym.make(env_id, **kwargs)
    if render_size:
        # Mesa's software renderer: no multisampling and no shadow pass. Shadows cost 40% of a
        # 480 px frame (24 -> 15 ms for HalfCheetah) and the scenes' overhead light casts them
        # almost unseen under the body. Must be set before the first render makes the context.
        model = mujoco_env(env).model
        model.vis.quality.offsamples = 0
        model.light_castshadow[:] = 0
        # The floor's reflection draws the scene a second time (22% of a 480 px HalfCheetah
        # frame) for a faint mirror image under the feet; capsules tessellated 16x8 instead of
        # 28x16 look the same at these sizes and take another 15%.
        model.mat_reflectance[:] = 0
        model.vis.quality.numslices = min(int(model.vis.quality.numslices), 16)
        model.vis.quality.numstacks = min(int(model.vis.quality.numstacks), 8)
        if env_id in TRACKING_CAMERA:
            _extend_floor(mujoco_env(env).model)
    if reward is None:
        return env
    wrapped = RewardWrapper(env, reward)
    wrapped.clock = _phase_clock(env_id, reward, env)
    return wrapped


def mujoco_env(env: gym.Env) -> MujocoEnv:
    """The MuJoCo env under an env's wrappers (every env here is one): its model, data, dt."""
    return cast(MujocoEnv, env.unwrapped)


def _extend_floor(model: mujoco.MjModel, half_size: float = FLOOR_HALF_SIZE) -> None:
    """Draw the floor plane out to half_size metres, keeping its checker squares the same size.

    A plane collides everywhere whatever its size, but is drawn only within it (20-40 m here): a
    good runner leaves the drawn floor within seconds and then seems to float in grey.
    """
    for g in np.flatnonzero(model.geom_type == mujoco.mjtGeom.mjGEOM_PLANE):
        size = float(model.geom_size[g, 0])
        if 0.0 < size < half_size:
            factor = half_size / size
            model.geom_size[g, :2] *= factor
            mat = int(model.geom_matid[g])
            if mat >= 0 and not model.mat_texuniform[mat]:
                model.mat_texrepeat[mat] *= factor


# Info keys RewardWrapper and the training wrappers add (besides "_"-prefixed ones).
_ADDED_INFO = frozenset(
    ("qpos", "qvel", "env_reward", "reward_terms", "episode", "TimeLimit.truncated")
)


def scalar_info(info: dict[str, Any]) -> dict[str, float]:
    """The env's own scalar numeric info fields (not the ones RewardWrapper adds)."""
    out: dict[str, float] = {}
    for key, value in info.items():
        if key.startswith("_") or key in _ADDED_INFO:
            continue
        if isinstance(value, bool | int | float) or (
            hasattr(value, "shape") and value.shape == () and value.dtype.kind in "biuf"
        ):
            out[key] = float(value)
    return out


def _phase_clock(env_id: str, reward: Rewards | LoadedReward, env: gym.Env) -> PhaseClock | None:
    """The phase and clock a reward's SHAPING asks for, counted as training counts them."""
    from activities.training.batched.shaping import evaluation_clock

    limit = int(env.spec.max_episode_steps or 0) if env.spec is not None else 0
    return evaluation_clock(getattr(reward, "shaping", None), env_id, limit)


def _termination(env_id: str, reward: Rewards | LoadedReward) -> dict[str, Any]:
    """The episode rules a reward's SHAPING sets for evaluation too (`healthy_z_range`); a
    SHAPING that cannot apply is the reward's error."""
    from activities.sandbox.reward_code import RewardLoadError
    from activities.training.batched.shaping import ShapingError, termination_kwargs

    try:
        return termination_kwargs(getattr(reward, "shaping", None), env_id)
    except ShapingError as exc:
        raise RewardLoadError(str(exc)) from None
