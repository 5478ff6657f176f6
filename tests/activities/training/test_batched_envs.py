"""The batched envs step exactly as Gymnasium's envs do, field by field."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from activities.envs.quiet import quiet_mujoco
from activities.training.batched.envs import BatchEnvs
from activities.training.reward_runtime import TransitionTap


@pytest.mark.parametrize(
    ("env_id", "generic", "threads"),
    [
        ("HalfCheetah-v5", False, 1),
        ("Hopper-v5", False, 1),
        ("Walker2d-v5", False, 1),
        ("Swimmer-v5", False, 1),
        ("Ant-v5", False, 1),
        ("Hopper-v5", True, 1),
        ("InvertedPendulum-v5", False, 1),
        # Physics on threads (three envs over two) steps each env exactly as alone, through
        # a kernel or through each env's own env.step (Humanoid has no kernel).
        ("Ant-v5", False, 2),
        ("Walker2d-v5", False, 2),
        ("Hopper-v5", True, 2),
        ("Humanoid-v5", False, 2),
    ],
)
def test_batched_steps_equal_gymnasium(env_id: str, generic: bool, threads: int) -> None:
    quiet_mujoco()
    n, steps = (2 if threads == 1 else 3), 1010
    batch = BatchEnvs(env_id, n, seed=7, generic=generic, sensors=True, threads=threads)
    assert batch.stepper.threads == threads
    refs = [TransitionTap(gym.make(env_id), sensors=True) for _ in range(n)]
    obs = batch.reset()
    ref_obs = np.array([r.reset(seed=7 + i)[0] for i, r in enumerate(refs)])
    np.testing.assert_array_equal(obs, ref_obs)
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(steps):
        # Wide actions: some fall outside the action space and must be clipped alike.
        actions = rng.uniform(-1.5, 1.5, size=(n, *batch.action_space.shape))
        out = batch.step(actions)
        for i, ref in enumerate(refs):
            clipped = np.clip(actions[i], batch.action_space.low, batch.action_space.high)
            np.testing.assert_array_equal(out.action[i], clipped)
            o, r, term, trunc, info = ref.step(clipped)
            _, prev, _, _, _ = ref.transition(0, clipped, o, info)
            np.testing.assert_array_equal(out.obs[i], prev)
            np.testing.assert_allclose(out.next_obs[i], o, rtol=0, atol=1e-12)
            assert out.env_reward[i] == pytest.approx(r, abs=1e-9)
            assert (bool(out.terminated[i]), bool(out.truncated[i])) == (term, trunc)
            assert bool(out.start[i]) == info["_episode_start"]
            for key, value in info.items():
                if key.startswith("_") or key == "env_reward":
                    continue
                np.testing.assert_allclose(out.info[key][i], value, atol=1e-9, err_msg=key)
            assert set(out.info) == {k for k in info if not k.startswith("_")} - {"env_reward"}
            if term or trunc:
                ends += 1
                ref.reset()
                np.testing.assert_array_equal(batch.obs[i], ref.last_obs)
    assert ends >= n  # every copy finished at least one episode (time limit or a fall)
    # The stepper tried the threads and the calling thread alike (equal results either way)
    # and kept the faster.
    assert batch.stepper.chosen in ({1, threads} if threads > 1 else {1})


def test_shaped_termination_and_episode_limits_apply_to_their_copies_only():
    from activities.training.batched.shaping import Shaping

    envs = BatchEnvs("Hopper-v5", 3, seed=0)
    envs.shape(slice(1, 2), Shaping(min_height=1.2))
    envs.shape(slice(2, 3), Shaping(max_episode_steps=20))
    envs.reset(seeds=[0, 0, 0])
    ended: dict[int, tuple[int, bool, float]] = {}
    for t in range(1, 400):
        out = envs.step(np.zeros((3, 3)))
        for i in np.flatnonzero(out.terminated | out.truncated):
            ended.setdefault(int(i), (t, bool(out.terminated[i]), out.info["qpos"][i, 1]))
        if len(ended) == 3:
            break
    plain, floor, short = ended[0], ended[1], ended[2]
    assert floor[1] and floor[2] < 1.2 and floor[0] < plain[0]  # fell below 1.2 m first
    assert short == (20, False, short[2])  # cut at 20 steps: truncated, not terminated


@pytest.mark.parametrize(
    ("env_id", "band", "shaped_ends_first"),
    [
        # Humanoid steps through env.step: relaxed to 0-5 m, its random copies never fall out.
        ("Humanoid-v5", (0.0, 5.0), False),
        # Ant steps through a kernel: moved above its starting height, its copies end at once.
        ("Ant-v5", (0.9, 1.0), True),
    ],
)
def test_a_shaped_healthy_band_moves_termination_for_its_copies_only(
    env_id: str, band: tuple[float, float], shaped_ends_first: bool
) -> None:
    from activities.training.batched.shaping import Shaping

    envs = BatchEnvs(env_id, 4, seed=0)
    envs.shape(slice(0, 2), Shaping(healthy_z_range=band))
    envs.reset()
    rng = np.random.default_rng(0)
    ended = np.zeros(4, dtype=bool)
    for _ in range(60):
        out = envs.step(rng.uniform(-0.4, 0.4, (4, envs.action_space.shape[0])))
        ended |= out.terminated
    envs.close()
    if shaped_ends_first:
        assert ended[:2].all() and not ended[2:].any()
    else:
        assert not ended[:2].any() and ended[2:].all()


def test_evaluation_plays_under_a_shaped_healthy_band_and_refuses_one_that_cannot_apply():
    from activities.runner.baseline_reward import RUN_FORWARD
    from activities.sandbox.reward_code import RewardLoadError
    from activities.training.batched.shaping import ShapingError, parse
    from activities.training.reward_runtime import LocalRewards, load_reward
    from activities.training.sim import make_env

    source = RUN_FORWARD + "\nSHAPING = {'healthy_z_range': [0.3, 3.0]}\n"
    shaped = LocalRewards(load_reward(source, "reward.py", guarded=False))
    # The evaluation env ends episodes where training's did.
    env = make_env("Humanoid-v5", shaped)
    assert env.unwrapped._healthy_z_range == (0.3, 3.0)  # type: ignore[attr-defined]
    env.close()
    with pytest.raises(RewardLoadError, match="does not end episodes on torso height"):
        make_env("HalfCheetah-v5", shaped)
    with pytest.raises(ShapingError, match=r"SHAPING\['healthy_z_range'\]: .*low < high"):
        parse({"healthy_z_range": [2.0, 1.0]}, "Humanoid-v5", 348, 1000)
