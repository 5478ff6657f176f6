"""Rewards that declare `vectorized = True` are scored a batch per call in the sandbox, and
only when that gives exactly what scoring row by row gives."""

from __future__ import annotations

import numpy as np
import pytest

from activities.sandbox.client import SandboxClient
from activities.sandbox.loaded_reward import load_reward
from activities.sandbox.reward_client import SandboxRewards
from activities.sandbox.reward_code import RewardLoadError
from activities.training.batched.envs import BatchEnvs

PER_ROW = """import numpy as np


class Forward(RewardFunction):
    def compute(self, obs, action, next_obs, info):
        terms = {
            "forward": float(np.minimum(info["x_velocity"], 3.0)),
            "ctrl": -0.1 * float(np.sum(np.square(action))),
            "height": float(info["qpos"][1]),
        }
        return sum(terms.values()), terms
"""

BATCHED = """import numpy as np


class Forward(RewardFunction):
    vectorized = True

    def compute(self, obs, action, next_obs, info):
        terms = {
            "forward": np.minimum(info["x_velocity"], 3.0),
            "ctrl": -0.1 * np.sum(np.square(action), axis=-1),
            "height": np.asarray(info["qpos"])[..., 1],
        }
        return sum(terms.values()), terms
"""

# Claims to be batched but is written for one row at a time: float() of a batch raises.
CLAIMS_BATCHED = PER_ROW.replace(
    "class Forward(RewardFunction):", "class Forward(RewardFunction):\n    vectorized = True\n"
)

# Claims to be batched but keeps state: one call for the batch would count once.
COUNTER = """class Counter(RewardFunction):
    vectorized = True

    def __init__(self):
        self.n = 0

    def compute(self, obs, action, next_obs, info):
        self.n += 1
        return float(self.n), {"count": float(self.n)}
"""

NAN_SOMETIMES = """import numpy as np


class Spiky(RewardFunction):
    vectorized = True

    def compute(self, obs, action, next_obs, info):
        v = np.asarray(info["x_velocity"], dtype=float)
        spike = np.where(v > 0, np.nan, v)
        return spike, {"spike": spike}
"""


@pytest.fixture(scope="module")
def columns() -> dict:
    envs = BatchEnvs("Hopper-v5", 4, seed=0)
    envs.reset()
    rng = np.random.default_rng(0)
    steps = [envs.step(rng.uniform(-1, 1, (4, 3))) for _ in range(64)]
    cat = lambda get: np.concatenate([get(s) for s in steps])  # noqa: E731
    return {
        "starts": cat(lambda s: s.start),
        "obs": cat(lambda s: s.obs),
        "action": cat(lambda s: s.action),
        "next_obs": cat(lambda s: s.next_obs),
        "info": {k: cat(lambda s, k=k: s.info[k]) for k in steps[0].info},
    }


def _score(
    source: str, cols: dict, instances: int = 4, strict: bool = False
) -> tuple[np.ndarray, dict]:
    with SandboxClient() as box:
        rewards = SandboxRewards(box, source, "reward.py", strict=strict)
        ids = [rewards.new_instance() for _ in range(instances)]
        n = len(cols["obs"])
        return rewards.score_columns(
            np.tile(ids, n // instances),
            cols["starts"],
            cols["obs"],
            cols["action"],
            cols["next_obs"],
            cols["info"],
        )


def test_a_batched_reward_scores_what_rows_one_by_one_score(columns: dict):
    rows_total, rows_terms = _score(PER_ROW, columns)
    batch_total, batch_terms = _score(BATCHED, columns)
    np.testing.assert_allclose(batch_total, rows_total, rtol=1e-12)
    assert list(batch_terms) == ["forward", "ctrl", "height"]
    for name in rows_terms:
        np.testing.assert_allclose(batch_terms[name], rows_terms[name], rtol=1e-12)


def test_code_that_only_claims_to_be_batched_is_scored_row_by_row(columns: dict):
    rows_total, _ = _score(PER_ROW, columns)
    claimed_total, _ = _score(CLAIMS_BATCHED, columns)
    np.testing.assert_allclose(claimed_total, rows_total, rtol=1e-12)
    reward = load_reward(CLAIMS_BATCHED, "claims.py")
    got = reward.score_rows(columns["obs"], columns["action"], columns["next_obs"], columns["info"])
    assert got is None and "batched call failed" in reward.vector_note


def test_state_kept_across_calls_is_noticed_and_each_instance_counts_its_own_rows(columns: dict):
    total, _ = _score(COUNTER, columns, instances=4)
    # Row by row, each of the 4 instances counts 1, 2, 3, ... over its own rows.
    np.testing.assert_array_equal(total[:8], [1, 1, 1, 1, 2, 2, 2, 2])
    assert total[-1] == len(total) // 4


def test_non_finite_rows_of_a_batch_are_zeroed_in_training_and_refused_in_validation(
    columns: dict,
):
    total, terms = _score(NAN_SOMETIMES, columns)
    v = columns["info"]["x_velocity"]
    assert (v > 0).any() and (v <= 0).any()
    np.testing.assert_array_equal(total[v > 0], 0.0)
    np.testing.assert_allclose(total[v <= 0], v[v <= 0])
    with pytest.raises(RewardLoadError, match="not finite"):
        _score(NAN_SOMETIMES, columns, strict=True)


@pytest.mark.parametrize("prompt", ["hop forward", "run forward as fast as possible"])
def test_the_offline_forward_template_is_scored_in_batches(columns: dict, prompt: str):
    from activities.llm.offline import OfflineAuthor

    code = OfflineAuthor().author(prompt, "Hopper-v5").reward.code
    batched = load_reward(code, "forward.py", strict=False)
    got = batched.score_rows(
        columns["obs"], columns["action"], columns["next_obs"], columns["info"]
    )
    assert got is not None and batched.vector_ok, batched.vector_note
    one = load_reward(code, "forward.py", strict=False)
    info = columns["info"]
    for i in range(0, len(columns["obs"]), 37):
        row = {k: (v[i] if v.ndim > 1 else float(v[i])) for k, v in info.items()}
        total, terms = one(columns["obs"][i], columns["action"][i], columns["next_obs"][i], row)
        assert got[0][i] == pytest.approx(total, rel=1e-12)
        assert {k: got[1][k][i] for k in terms} == pytest.approx(terms, rel=1e-12)
