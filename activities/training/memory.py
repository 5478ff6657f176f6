"""The address space a training child needs beyond its base cap: MuJoCo's states.

Every MjData reserves its model's arena up front (13-15 MB for the walkers, mostly never
touched), so the runner's address-space cap (`POLICYFORGE_SANDBOX_MEMORY_MB`, 4 GB) that fits
PPO, torch and one env is too small for a batch of envs: Humanoid's preset steps 128 copies,
1.9 GB of arenas, and failed with MuJoCo's "Could not allocate memory". The child adds what its
envs reserve to the cap instead of dropping it, so a runaway still meets a bound.
"""

from __future__ import annotations

import math

from activities.runner.protocol import ChildRequest
from activities.training.presets import preset_for

EVAL_ENVS = 8  # evaluation and checkpoint envs a run keeps beside its training copies
HEADROOM = 1.5  # on the states counted: models, renderers' buffers, allocator slack


def state_mb(env_id: str) -> float:
    """Address space one MjData of `env_id` reserves (its arena and buffer), in MB."""
    # Imported here: supervisors import the job modules without the simulator.
    import gymnasium as gym

    from activities.envs.quiet import quiet_mujoco

    quiet_mujoco()
    env = gym.make(env_id)
    try:
        model = env.unwrapped.model  # type: ignore[attr-defined]
        return (int(model.narena) + int(model.nbuffer)) / 2**20
    finally:
        env.close()


def physics_reserve_mb(req: ChildRequest) -> int:
    """MB to add to the address-space cap for the envs this request steps at once."""
    overrides = [req.ppo, *(m.ppo for m in req.members)]
    per_run = max(preset_for(req.env_id, {**req.ppo, **o}).n_envs for o in overrides)
    copies = per_run * max(1, len(req.members)) + EVAL_ENVS
    return math.ceil(copies * state_mb(req.env_id) * HEADROOM)
