"""A training child's address-space cap makes room for its envs' MuJoCo states: Humanoid's
preset (128 copies) failed with "Could not allocate memory" under the 4 GB cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.runner.protocol import BatchMember, ChildRequest
from activities.training.memory import physics_reserve_mb, state_mb
from workers.local.train import train_local


def test_the_reserve_counts_every_copy_a_run_steps():
    humanoid = physics_reserve_mb(ChildRequest(env_id="Humanoid-v5", timesteps=1))
    assert humanoid >= 128 * state_mb("Humanoid-v5")  # its preset's 128 copies at least
    fewer = physics_reserve_mb(ChildRequest(env_id="Humanoid-v5", timesteps=1, ppo={"n_envs": 8}))
    assert fewer < humanoid / 4
    member = BatchMember(name="c", reward_source="x")
    batch = ChildRequest(env_id="Hopper-v5", timesteps=1, members=[member] * 4)
    single = ChildRequest(env_id="Hopper-v5", timesteps=1)
    assert physics_reserve_mb(batch) > 3 * physics_reserve_mb(single) - 1


@pytest.mark.slow
def test_a_humanoid_run_trains_under_the_default_cap(tmp_path: Path):
    reward = tmp_path / "reward.py"
    reward.write_text(
        "class Up(RewardFunction):\n"
        "    def compute(self, obs, action, next_obs, info):\n"
        "        return 1.0, {'alive': 1.0}\n"
        "    @property\n"
        "    def latex(self):\n"
        "        return 'r = 1'\n"
        "    @property\n"
        "    def terms(self):\n"
        "        return ['alive']\n"
    )
    summary = train_local(
        reward, "Humanoid-v5", 4096, 0, tmp_path / "out", max_eval_steps=20, record_video=False
    )
    assert summary["evaluation"]["episode_length"] > 0
