"""`policyforge bench-sandbox`: the sandbox's overhead on the built-in reward, and where a given
reward's time goes in training, measured in its sandbox only."""

from __future__ import annotations

from pathlib import Path

from workers.local.bench_sandbox import bench

PRIMITIVES_REWARD = """
import primitives as P

ENV = "Hopper-v5"


class Hop(RewardFunction):
    def compute(self, obs, action, next_obs, info):
        terms = {
            "speed": P.velocity_reward(ENV, info, target=1.0),
            "upright": 0.5 * P.upright_reward(ENV, info),
            "ctrl": -0.001 * P.control_cost(action),
        }
        return sum(terms.values()), terms
"""


def test_a_given_reward_is_measured_in_its_sandbox(tmp_path: Path):
    out = bench("Hopper-v5", timesteps=2048, steps=256, repeats=1, reward_source=PRIMITIVES_REWARD)
    for metric in ("env_steps_per_s", "train_steps_per_s"):
        assert out[metric]["guarded"] > 0 and out[metric]["unguarded"] > 0
    cost = out["reward"]
    assert cost["source"] == "given" and cost["train_steps_per_s"] > 0
    # Its calls took time (the primitives run per step), and the run waited for a share of it.
    assert cost["calls_us_per_step"] > 0
    assert 0 <= cost["wait_pct_of_run"] < 100
