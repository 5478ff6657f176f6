"""The batched trainer: K candidates in one process, each trained as its own PPO."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import DummyVecEnv

from activities.runner.baseline_reward import RUN_FORWARD
from activities.sandbox.client import SandboxClient
from activities.sandbox.reward_client import SandboxRewards
from activities.training.batched.candidates import Candidate, batch_shape
from activities.training.batched.evaluate import evaluate_candidates
from activities.training.batched.export import save_candidate
from activities.training.batched.normalize import StackedNormalizer
from activities.training.batched.ppo import BatchedPPO
from activities.training.batched.warm import warm_or_cold, warm_start
from activities.training.evaluation import deterministic_act
from activities.training.policy_io import load_vecnormalize
from activities.training.presets import preset_for
from activities.training.reward_runtime import LocalRewards, load_reward
from activities.training.rollout import load_model
from activities.training.sim import make_env
from workflows.contracts.keys import SCALARS


def _local(source: str = RUN_FORWARD) -> LocalRewards:
    return LocalRewards(load_reward(source, "reward.py", guarded=False))


def test_normalizer_matches_sb3_running_statistics():
    rng = np.random.default_rng(0)
    norm = StackedNormalizer(
        2, 3, (4,), np.array([0.99, 0.9]), norm_obs=True, norm_reward=True, clip_obs=10.0
    )
    refs = [RunningMeanStd(shape=(4,)) for _ in range(2)]
    ret_refs = [RunningMeanStd(shape=()) for _ in range(2)]
    returns = np.zeros((2, 3))
    rewards = rng.normal(size=(5, 2, 3))
    dones = rng.random((5, 2, 3)) < 0.3
    for _ in range(5):
        obs = rng.normal(2.0, 3.0, size=(2, 3, 4))
        out = norm.observe(obs)
        for k in range(2):
            refs[k].update(obs[k])
            want = np.clip((obs[k] - refs[k].mean) / np.sqrt(refs[k].var + 1e-8), -10, 10)
            np.testing.assert_allclose(out[k], want, rtol=1e-5, atol=1e-6)
    scaled = norm.rewards(rewards, dones)
    for t in range(5):
        for k, gamma in enumerate((0.99, 0.9)):
            returns[k] = returns[k] * gamma + rewards[t, k]
            ret_refs[k].update(returns[k])
            want = np.clip(rewards[t, k] / np.sqrt(ret_refs[k].var + 1e-8), -10, 10)
            np.testing.assert_allclose(scaled[t, k], want, rtol=1e-5)
            returns[k][dones[t, k]] = 0


def test_in_process_guarded_rewards_are_scored_in_the_calling_thread():
    # Their call budget is a signal timer, which only the main thread may set: the engine
    # scores them after the rollout, not on its scoring thread (sandboxes are scored beside it).
    guarded = LocalRewards(load_reward(RUN_FORWARD, "reward.py", guarded=True))
    ppo = BatchedPPO("Hopper-v5", [Candidate("c0", guarded, preset_for("Hopper-v5"))], 2048, 3)
    assert not ppo._threaded
    ppo.learn()
    assert ppo.steps_done == 2048 and ppo.stats[0].transitions == 2048
    ppo.close()


def test_candidates_must_share_the_batch_shape():
    with pytest.raises(ValueError, match="share n_envs"):
        batch_shape([preset_for("Hopper-v5"), preset_for("Hopper-v5", {"n_envs": 4})])


def test_each_candidate_has_its_own_optimiser_and_exports_to_plain_sb3(tmp_path: Path):
    # Candidate 1 has a learning rate of 0: if any update leaked across candidates, its
    # parameters would move.
    presets = [preset_for("Hopper-v5"), preset_for("Hopper-v5", {"learning_rate": 0.0})]
    ppo = BatchedPPO(
        "Hopper-v5", [Candidate(f"c{i}", _local(), p) for i, p in enumerate(presets)], 4096, 3
    )
    before = [p.detach().clone() for p in ppo.policy.parameters()]
    ppo.learn()
    assert ppo.steps_done == 4096 and ppo.updates == 2
    for old, new in zip(before, ppo.policy.parameters(), strict=True):
        assert not torch.equal(old[0], new[0])  # candidate 0 trained
        assert torch.equal(old[1], new[1])  # candidate 1 did not move at all
    for stats in ppo.stats:
        assert stats.returns and stats.transitions == 4096  # Hopper episodes end early
        assert set(stats.term_sums) == {"forward", "ctrl"}

    # The exported model is a plain SB3 PPO: its deterministic actions, through the saved
    # normalisation, are the batch's own.
    env = make_env("Hopper-v5", None)
    obs = np.array([env.reset(seed=s)[0] for s in range(6)])
    venv_base = DummyVecEnv([lambda: make_env("Hopper-v5", None)])
    for k in range(2):
        save_candidate(ppo, k, tmp_path / f"c{k}")
        model = load_model("ppo", tmp_path / f"c{k}" / "model.zip")
        venv = load_vecnormalize(tmp_path / f"c{k}" / "vecnormalize.npz", venv_base)
        exported = deterministic_act(model, venv)(obs)
        batched = ppo.deterministic_actions(np.repeat(obs[None], 2, axis=0))[k]
        np.testing.assert_allclose(exported, batched, atol=1e-5)
    results = evaluate_candidates(ppo, seed=0)
    assert [r["eval_length"] > 0 for r in results] == [True, True]
    ppo.close()


@pytest.mark.slow  # trains until learning shows
def test_candidates_learn_together_with_rewards_in_their_sandboxes():
    # InvertedPendulum: episodes end when the pole falls, so learning shows as longer episodes.
    boxes = [SandboxClient() for _ in range(2)]
    try:
        alive = load_alive()
        cands = [
            Candidate(f"c{i}", SandboxRewards(box, alive, f"c{i}.py", strict=False), p)
            for i, (box, p) in enumerate(
                zip(boxes, [preset_for("InvertedPendulum-v5")] * 2, strict=True)
            )
        ]
        ppo = BatchedPPO("InvertedPendulum-v5", cands, 12_288, seed=0)
        ppo.learn()
        for stats in ppo.stats:
            first, last = np.mean(stats.lengths[:20]), np.mean(stats.lengths[-20:])
            assert last > 2 * first, (first, last)
        ppo.close()
    finally:
        for box in boxes:
            box.close()


def load_alive() -> str:
    return """import numpy as np


class Alive(RewardFunction):
    vectorized = True

    def compute(self, obs, action, next_obs, info):
        alive = 1.0 + 0.0 * np.asarray(info["qpos"], dtype=float)[..., 0]
        return alive, {"alive": alive}
"""


SHAPED = (
    RUN_FORWARD
    + """
SHAPING = {
    "obs_drop": [0, 5],
    "obs_scale": 2.0,
    "action_scale": 0.5,
    "init_noise": 0.0,
    "max_episode_steps": 150,
    "min_height": 1.1,
}
"""
)


def test_shaped_candidates_train_and_export_to_a_plain_policy_of_the_unshaped_env(
    tmp_path: Path,
):
    presets = [preset_for("Hopper-v5")] * 2
    cands = [
        Candidate("plain", _local(), presets[0]),
        Candidate("shaped", _local(SHAPED), presets[1]),
    ]
    ppo = BatchedPPO("Hopper-v5", cands, 4096, seed=5)
    # init_noise 0: the shaped group starts exactly at the model's initial pose.
    env0 = ppo.envs.envs[ppo.e]
    np.testing.assert_array_equal(env0.data.qpos, env0.init_qpos)
    assert not np.array_equal(ppo.envs.envs[0].data.qpos, ppo.envs.envs[0].init_qpos)
    ppo.learn()
    plain, shaped = ppo.stats
    assert max(shaped.lengths) <= 150 and max(plain.lengths) > 0

    env = make_env("Hopper-v5", None)
    obs = np.array([env.reset(seed=s)[0] for s in range(6)])
    obs[:, 0] += 0.3  # a dropped input: it must not change any action
    venv_base = DummyVecEnv([lambda: make_env("Hopper-v5", None)])
    save_candidate(ppo, 1, tmp_path / "shaped")
    model = load_model("ppo", tmp_path / "shaped" / "model.zip")
    venv = load_vecnormalize(tmp_path / "shaped" / "vecnormalize.npz", venv_base)
    exported = deterministic_act(model, venv)(obs)
    batched = ppo.deterministic_actions(np.repeat(obs[None], 2, axis=0))[1]
    np.testing.assert_allclose(exported, batched, atol=1e-4)
    obs[:, 0] -= 0.6
    np.testing.assert_allclose(deterministic_act(model, venv)(obs), exported, atol=1e-6)
    ppo.close()


@pytest.mark.parametrize("source", [SHAPED, RUN_FORWARD], ids=["same shaping", "unshaped"])
def test_a_warm_start_continues_the_saved_policy_on_the_engine(tmp_path: Path, source: str):
    # A shaped policy trains and is saved as plain SB3 files; a fresh engine run warm-started
    # from them acts as the saved policy does on the env's own observations, whether the new
    # reward keeps its shaping (scaled observations and actions) or drops it.
    old = BatchedPPO(
        "Hopper-v5", [Candidate("run", _local(SHAPED), preset_for("Hopper-v5"))], 4096, 5
    )
    old.learn()
    save_candidate(old, 0, tmp_path / "prev")
    new = BatchedPPO(
        "Hopper-v5", [Candidate("run", _local(source), preset_for("Hopper-v5"))], 4096, 9
    )
    env = make_env("Hopper-v5", None)
    obs = np.array([env.reset(seed=s)[0] for s in range(6)])[None]
    assert not np.allclose(
        new.deterministic_actions(obs), old.deterministic_actions(obs), atol=1e-3
    )
    assert warm_start(new, 0, tmp_path / "prev") is None
    model = load_model("ppo", tmp_path / "prev" / "model.zip")
    venv = load_vecnormalize(
        tmp_path / "prev" / "vecnormalize.npz", DummyVecEnv([lambda: make_env("Hopper-v5", None)])
    )
    saved = deterministic_act(model, venv)(obs[0])
    np.testing.assert_allclose(new.deterministic_actions(obs)[0], saved, atol=1e-4)
    if source == SHAPED:  # the same shaping: the same values and exploration noise
        x = torch.as_tensor(old._policy_obs(obs * 1.0))
        y = torch.as_tensor(new._policy_obs(obs * 1.0))
        torch.testing.assert_close(new.policy.value(y), old.policy.value(x), atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(new.policy.log_std, old.policy.log_std)
    new.learn()  # and it trains on from there
    assert new.steps_done == 4096
    old.close(), new.close()


PUSH = """
def reward_fn(obs, action, next_obs, info):
    r = {sign} * float(action.sum())
    return r, {{"push": r}}
"""


@pytest.mark.parametrize(("sign", "applied"), [(1, True), (-1, False)])
def test_a_warm_start_is_kept_only_when_the_new_reward_values_the_previous_policy(
    tmp_path: Path, sign: int, applied: bool
):
    # The previous policy pushes every joint to +0.9. A reward that pays for pushing keeps
    # the warm start; one that pays for the opposite (a reward that changed sign) starts cold,
    # every parameter and statistic as the fresh policy had them.
    env = "HalfCheetah-v5"
    old = BatchedPPO(env, [Candidate("run", _local(PUSH.format(sign=1)), preset_for(env))], 2048, 5)
    with torch.no_grad():
        old.policy.actor.biases[-1][0].fill_(0.9)
    save_candidate(old, 0, tmp_path / "prev")
    old.close()
    new = BatchedPPO(
        env, [Candidate("run", _local(PUSH.format(sign=sign)), preset_for(env))], 2048, 9
    )
    fresh = [p.detach().clone() for p in new.policy.parameters()]
    decided = warm_or_cold(new, 0, tmp_path / "prev", seed=3)
    assert decided["applied"] is applied
    previous, start = decided["returns"]["previous"], decided["returns"]["fresh"]
    assert (previous > start) is applied and abs(previous) > 1000  # 1,000 steps of +-0.9 x 6
    unchanged = all(torch.equal(a, b) for a, b in zip(fresh, new.policy.parameters(), strict=True))
    assert unchanged is not applied
    if not applied:
        assert "changed sign or meaning" in decided["reason"]
    new.learn()
    new.close()


def test_a_warm_start_that_does_not_fit_keeps_the_fresh_policy_and_says_why(tmp_path: Path):
    old = BatchedPPO("Hopper-v5", [Candidate("run", _local(), preset_for("Hopper-v5"))], 2048, 5)
    save_candidate(old, 0, tmp_path / "prev")
    old.close()
    wide = preset_for("Hopper-v5", {"net_arch": [64, 64]})
    new = BatchedPPO("Hopper-v5", [Candidate("run", _local(), wide)], 2048, 9)
    before = [p.detach().clone() for p in new.policy.parameters()]
    assert "net_arch" in (warm_start(new, 0, tmp_path / "prev") or "")
    for a, b in zip(before, new.policy.parameters(), strict=True):
        assert torch.equal(a, b)
    (tmp_path / "prev" / "model.zip").write_bytes(b"not a zip")
    new2 = BatchedPPO("Hopper-v5", [Candidate("run", _local(), preset_for("Hopper-v5"))], 2048, 9)
    assert warm_start(new2, 0, tmp_path / "prev")
    new.close(), new2.close()


@pytest.mark.parametrize(
    ("shaping", "field"),
    [
        ('{"obs_drop": [99]}', "obs_drop"),
        ('{"action_scale": 2.0}', "action_scale"),
        ('{"max_episode_steps": 5000}', "max_episode_steps"),
        ('{"gravity": 0.5}', "gravity"),
        ('"fast"', "SHAPING must be a dict"),
    ],
)
def test_shaping_that_cannot_apply_is_refused_naming_the_field(shaping: str, field: str):
    # The reward's error (it came from its sandbox), for the fixer: issue 42.
    from activities.sandbox.reward_code import RewardLoadError

    source = RUN_FORWARD + f"\nSHAPING = {shaping}\n"
    with pytest.raises(RewardLoadError, match=field):
        BatchedPPO("Hopper-v5", [Candidate("c", _local(source), preset_for("Hopper-v5"))], 512, 0)


def test_shaping_comes_from_the_sandbox_as_data_only():
    from activities.sandbox.reward_code import RewardLoadError

    with SandboxClient() as box:
        rewards = SandboxRewards(box, SHAPED, "shaped.py", strict=False)
        assert rewards.shaping["obs_drop"] == [0, 5] and rewards.shaping["action_scale"] == 0.5
        with pytest.raises(RewardLoadError, match="SHAPING must be plain data"):
            SandboxRewards(box, RUN_FORWARD + "\nSHAPING = {'x': print}\n", "bad.py")


def test_validation_refuses_bad_shaping_and_a_single_ppo_run_applies_it(tmp_path: Path):
    from activities.runner.protocol import ChildFailed, ChildRequest
    from activities.runner.supervisor import run_child
    from activities.training import job
    from workers.local.train import _run_sync

    def run(mode, source: str, out: str, **kw) -> dict:
        req = ChildRequest(env_id="Hopper-v5", reward_source=source, steps=16, **kw)
        return _run_sync(lambda: run_child(mode, req, tmp_path / out, stall_s=120))

    assert run(job.VALIDATE, SHAPED, "ok")["steps"] == 16
    with pytest.raises(ChildFailed, match=r"SHAPING\['obs_drop'\]") as bad:
        run(job.VALIDATE, RUN_FORWARD + "\nSHAPING = {'obs_drop': [40]}\n", "bad")
    assert bad.value.reward_fault  # the fixer gets it as the reward's error
    # A session whose runs cannot apply SHAPING (SAC, TD3) refuses it at
    # validation, where the fixer sees why, rather than when training starts.
    with pytest.raises(ChildFailed, match="do not apply SHAPING") as refused:
        run(job.VALIDATE, SHAPED, "no-shaping", shaping=False)
    assert refused.value.reward_fault
    # A session's single PPO run trains on the engine, which applies the shaping: its
    # episodes end at the shaped limit (150 steps) or height (1.1 m), well before 1,000 steps.
    summary = run(job.TRAIN, SHAPED, "train", timesteps=16 * 200, ppo={"n_steps": 200})
    assert summary["timesteps_done"] == 3200 and summary["episodes"] >= 16
    lengths = [json.loads(line)["ep_len_mean"] for line in (tmp_path / "train" / SCALARS).open()]
    assert 0 < lengths[-1] <= 150
    # The SB3 trainer (SAC here) cannot apply it, and says so rather than train without it.
    with pytest.raises(ChildFailed, match="SHAPING is applied by PPO runs on the engine"):
        run(job.TRAIN, SHAPED, "sac", timesteps=256, algo="sac")


@pytest.mark.slow  # two trainings side by side
def test_an_export_in_the_middle_of_training_changes_nothing_in_it(tmp_path: Path):
    # Evaluation checkpoints export candidates between updates; SB3 reseeds the global
    # generators when it builds a model, which must not reach the training's exploration noise.
    def trained(export: bool) -> list[torch.Tensor]:
        ppo = BatchedPPO("Hopper-v5", [Candidate("c0", _local(), preset_for("Hopper-v5"))], 6144, 3)
        ppo.learn(lambda p: save_candidate(p, 0, tmp_path / "mid") if export else None)
        assert ppo.updates == 3
        params = [p.detach().clone() for p in ppo.policy.parameters()]
        ppo.close()
        return params

    for plain, exported in zip(trained(False), trained(True), strict=True):
        assert torch.equal(plain, exported)


def test_a_time_budget_plans_the_steps_from_the_measured_speed(tmp_path: Path):
    from activities.runner.protocol import ChildRequest
    from activities.runner.supervisor import run_child
    from activities.training import job
    from workers.local.train import _run_sync

    cap = 50_000_000  # far more than a few seconds train: the time decides
    req = ChildRequest(
        env_id="Hopper-v5",
        reward_source=RUN_FORWARD,
        timesteps=cap,
        max_seconds=4.0,
        ppo={"n_steps": 32},  # 512 steps an update: several before the plan is made
        eval_checkpoint_episodes=2,
        max_steps=10,
    )
    events: list[dict] = []
    summary = _run_sync(lambda: run_child(job.TRAIN, req, tmp_path, events.append, stall_s=120))
    [planned] = [e for e in events if e.get("event") == "planned"]
    plan = summary["time_plan"]
    assert plan["planned_timesteps"] == planned["timesteps"] < cap and plan["steps_per_second"] > 0
    # The run trained what it planned, in whole updates, and its budget is the plan (or, on a
    # machine that slowed down after planning, stopped at a tenth over its time and says so).
    assert summary["timesteps"] == planned["timesteps"]
    assert summary["timesteps_done"] % 512 == 0
    if plan["overran"]:
        assert summary["timesteps_done"] < planned["timesteps"]
        return
    assert summary["timesteps_done"] == planned["timesteps"]
    # The evaluation checkpoints moved with the plan: all four, the last at its end.
    kept = [e for e in events if e.get("event") == "eval_checkpoint"]
    assert [e["pct"] for e in kept] == [25, 50, 75, 100]
    assert kept[-1]["timesteps"] == summary["timesteps_done"]


# Runs on random steps; fails once an instance has scored 100 steps (a branch that only a
# longer run reaches, as a phase or a rare contact would be).
FAILS_LATER = """import numpy as np


class FailsLater(RewardFunction):
    def __init__(self):
        self.n = 0

    def compute(self, obs, action, next_obs, info):
        self.n += 1
        if self.n > 100:
            return 1.0 / 0.0, {}
        return 1.0, {"alive": 1.0}
"""


@pytest.mark.parametrize("drop", [True, False])
def test_a_candidate_whose_reward_fails_mid_batch_is_dropped_and_the_others_train_on(drop: bool):
    boxes = [SandboxClient() for _ in range(2)]
    try:
        preset = preset_for("InvertedPendulum-v5")
        sources = [load_alive(), FAILS_LATER]
        cands = [
            Candidate(f"c{i}", SandboxRewards(box, src, f"c{i}.py", strict=False), preset)
            for i, (box, src) in enumerate(zip(boxes, sources, strict=True))
        ]
        ppo = BatchedPPO("InvertedPendulum-v5", cands, 3 * 2048, seed=0, drop_faulty=drop)
        if not drop:  # a single run's reward error ends it, as before
            with pytest.raises(Exception, match="ZeroDivisionError"):
                ppo.learn()
            return
        ppo.learn()
        assert ppo.steps_done == 3 * 2048 and not ppo.stopped
        assert list(ppo.faults) == [1] and "ZeroDivisionError" in ppo.faults[1]
        assert ppo.stats[0].transitions == 3 * 2048  # the other candidate trained every step
        assert ppo.stats[1].transitions == 0
        ppo.close()
    finally:
        for box in boxes:
            box.close()


def test_batched_and_single_runs_log_the_same_columns_and_term_window(tmp_path: Path):
    from activities.runner.protocol import ChildRequest
    from activities.training.batched.run import train_members

    req = ChildRequest(env_id="Hopper-v5", timesteps=4 * 512, seed=0, ppo={"n_steps": 32})
    preset = preset_for("Hopper-v5", {"n_steps": 32})
    columns, summaries = [], []
    for k in (2, 1):
        cands = [Candidate(f"c{i}", _local(), preset) for i in range(k)]
        folders = [tmp_path / f"k{k}" / c.name for c in cands]
        result = train_members(req, cands, folders, tmp_path / f"k{k}", lambda e: None)
        for folder in folders:
            rows = [json.loads(line) for line in (folder / SCALARS).open()]
            columns.append(set(rows[-1]))
            summary = json.loads((folder / "summary.json").read_text())
            late = [r for r in rows if r["timesteps"] > 0.75 * summary["timesteps_done"]]
            want = {t: np.mean([r[f"term_{t}"] for r in late]) for t in ("forward", "ctrl")}
            summaries.append((summary["term_means"], want))
        assert result
    # Every member of a batch and a single run: the same columns, per-term ones included, and
    # term means over the last quarter of training (what the reviser reads).
    assert all(c == columns[0] for c in columns)
    assert {"ep_return_mean", "ep_len_mean", "term_forward", "term_ctrl"} <= columns[0]
    for got, want in summaries:
        assert got.keys() >= want.keys()
        for t, v in want.items():
            assert got[t] == pytest.approx(v)


def test_a_reward_failing_on_a_step_names_that_steps_inputs_for_the_fixer():
    with SandboxClient() as box:
        rewards = SandboxRewards(box, FAILS_LATER, "c0.py", strict=False)
        ppo = BatchedPPO(
            "InvertedPendulum-v5",
            [Candidate("c0", rewards, preset_for("InvertedPendulum-v5"))],
            2048,
            seed=0,
        )
        with pytest.raises(Exception) as info:
            ppo.learn()
        ppo.close()
    # Where it failed, and on what: the step's info scalars and its action.
    message = str(info.value)
    assert "c0.py line 11: ZeroDivisionError" in message
    assert "(on a step with " in message and "largest |action|" in message
