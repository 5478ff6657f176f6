"""The env spec for prompts against the live Gymnasium environments, index by index."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from activities.envs.catalog import facts
from activities.envs.meanings import UNKNOWN_INFO
from activities.envs.quiet import quiet_mujoco
from activities.envs.spec import env_spec
from activities.envs.spec_model import FINGERTIP, EnvSpec
from activities.training.reward_runtime import load_reward
from activities.training.sim import make_env
from workflows.contracts.session import ENV_IDS

# Characters; Humanoid (348-dim observation) is the largest, with ~3k for the primitives (full
# signatures and an example that runs as written).
PROMPT_BUDGET = 10500


@pytest.fixture(scope="module", params=ENV_IDS)
def env(request: pytest.FixtureRequest) -> Iterator[gym.Env]:
    quiet_mujoco()
    e = gym.make(request.param)
    yield e
    e.close()


@pytest.fixture
def spec(env: gym.Env) -> EnvSpec:
    return env_spec(env.spec.id)


def _source(data: Any, name: str) -> np.ndarray:
    if name == FINGERTIP:
        return data.body("fingertip").xpos - data.body("target").xpos
    return getattr(data, name)


def _expected(spec: EnvSpec, data: Any) -> np.ndarray:
    """The observation as the spec describes it, computed from the simulator's arrays."""
    out = np.full(spec.obs_dim, np.nan)
    for e in spec.obs_entries():
        v = np.ravel(_source(data, e.source))[e.source_index]
        if e.transform in ("sin", "cos"):
            v = getattr(np, e.transform)(v)
        elif e.transform == "clip":
            assert e.clip is not None
            v = np.clip(v, *e.clip)
        out[e.index] = v
    return out


def test_every_index_is_covered_once(env: gym.Env, spec: EnvSpec):
    assert spec.obs_dim == env.observation_space.shape[0] == facts(spec.env_id).obs_dim
    assert [e.index for e in spec.obs_entries()] == list(range(spec.obs_dim))
    end = 0
    for seg in spec.observation:
        assert seg.start == end and [e.index for e in seg.entries] == list(
            range(seg.start, seg.end)
        )
        assert all(e.source == seg.source and e.transform == seg.transform for e in seg.entries)
        end = seg.end
    assert end == spec.obs_dim


def test_layout_matches_live_observations(env: gym.Env, spec: EnvSpec):
    u = env.unwrapped
    obs, _ = env.reset(seed=1)
    np.testing.assert_allclose(obs, _expected(spec, u.data), rtol=1e-12, atol=1e-12)
    env.action_space.seed(1)
    for _ in range(5):
        obs, *_ = env.step(env.action_space.sample())
        np.testing.assert_allclose(obs, _expected(spec, u.data), rtol=1e-12, atol=1e-12)


def test_layout_is_exact_on_distinct_values(env: gym.Env, spec: EnvSpec):
    """Fill every source array with distinct random values: any shifted or swapped index fails.

    Small values keep every entry distinct (no clipping); large ones exercise the clipping.
    """
    u = env.unwrapped
    d = u.data
    rng = np.random.default_rng(0)
    try:
        for scale in (0.9, 50.0):
            for name in ("qpos", "qvel", "cinert", "cvel", "qfrc_actuator", "cfrc_ext", "xpos"):
                getattr(d, name)[:] = rng.uniform(-scale, scale, getattr(d, name).shape)
            d.qfrc_constraint[:] = rng.uniform(-scale, scale, d.qfrc_constraint.shape)
            obs = u._get_obs()
            if scale < 1:
                assert len(np.unique(obs)) == spec.obs_dim
            np.testing.assert_allclose(obs, _expected(spec, d), rtol=1e-12, atol=1e-12)
    finally:
        env.reset(seed=0)


def test_state_names_and_excluded_qpos(env: gym.Env, spec: EnvSpec):
    u = env.unwrapped
    m = u.model
    assert (spec.nq, spec.nv, spec.nbody) == (m.nq, m.nv, m.nbody)
    assert [s.index for s in spec.qpos] == list(range(m.nq))
    assert [s.index for s in spec.qvel] == list(range(m.nv))
    assert [j.name for j in spec.joints] == [m.joint(j).name for j in range(m.njnt)]
    for j in range(m.njnt):
        name = m.joint(j).name
        assert spec.qpos[int(m.jnt_qposadr[j])].joint == name
        assert spec.qvel[int(m.jnt_dofadr[j])].joint == name
        assert spec.joints[j].qpos_start == m.jnt_qposadr[j]
    assert [b.name for b in spec.bodies] == [m.body(b).name for b in range(m.nbody)]
    # Excluded qpos: exactly the leading entries the env skips (its own setting).
    skipped = getattr(u, "observation_structure", {}).get("skipped_qpos", 0)
    assert spec.excluded_qpos == tuple(range(skipped))
    in_obs = {e.source_index for e in spec.obs_entries() if e.source == "qpos"}
    assert in_obs | set(spec.excluded_qpos) == set(range(m.nq))
    assert not in_obs & set(spec.excluded_qpos)


def test_action_layout(env: gym.Env, spec: EnvSpec):
    m = env.unwrapped.model
    assert spec.act_dim == len(spec.action) == m.nu == env.action_space.shape[0]
    for a in spec.action:
        assert a.ctrl_range == tuple(m.actuator_ctrlrange[a.index])
        assert a.ctrl_range == (env.action_space.low[a.index], env.action_space.high[a.index])
        assert a.joint == m.joint(int(m.actuator_trnid[a.index, 0])).name
        assert a.gear == m.actuator_gear[a.index, 0]
        assert a.actuator == m.actuator(a.index).name


def test_info_timing_and_health(env: gym.Env, spec: EnvSpec):
    u, f = env.unwrapped, facts(spec.env_id)
    env.reset(seed=0)
    _, _, _, _, info = env.step(env.action_space.sample())
    assert tuple(k.key for k in spec.info) == tuple(info) == f.info_keys
    assert all(k.shape == np.shape(info[k.key]) for k in spec.info)
    assert all(k.meaning != UNKNOWN_INFO for k in spec.info)  # the meanings table is complete
    assert spec.dt == pytest.approx(u.dt) and spec.frame_skip == u.frame_skip
    assert spec.max_episode_steps == env.spec.max_episode_steps
    assert spec.terminates == f.terminates
    assert spec.healthy_z_range == (tuple(u._healthy_z_range) if f.healthy_z else None)
    for attr in ("angle", "state"):
        live = getattr(u, f"_healthy_{attr}_range", None)
        assert getattr(spec, f"healthy_{attr}_range") == (tuple(live) if live else None)
    assert (spec.healthy_rule is not None) == spec.terminates
    if hasattr(u, "_ctrl_cost_weight"):
        assert spec.reward_params["ctrl_cost_weight"] == u._ctrl_cost_weight
        assert f"{u._ctrl_cost_weight:g}" in spec.reward_formula


def test_prompt_and_dict(spec: EnvSpec):
    prompt = spec.to_prompt()
    assert len(prompt) < PROMPT_BUDGET
    assert all(j.name in prompt for j in spec.joints)
    assert all(f"- {k.key}" in prompt for k in spec.info)
    assert 'info["qpos"]' in prompt and 'info["qvel"]' in prompt
    assert f"## Observation: {spec.obs_dim} entries" in prompt
    assert sum(line.startswith("- action[") for line in prompt.splitlines()) == spec.act_dim
    for i in spec.excluded_qpos:
        assert f'NOT in obs: info["qpos"][{i}]' in prompt
    json.dumps(spec.to_dict(), allow_nan=False)
    assert env_spec(spec.env_id) is spec  # cached


def test_prompt_examples():
    ant, humanoid = env_spec("Ant-v5"), env_spec("Humanoid-v5")
    assert ant.obs_dim == 105 and "obs_dim = 105" in ant.to_prompt()
    assert ant.excluded_qpos == (0, 1)
    cfrc = ant.observation[-1]
    assert (cfrc.source, cfrc.start, cfrc.end, cfrc.clip) == ("cfrc_ext", 27, 105, (-1.0, 1.0))
    assert humanoid.act_dim == 17
    assert all(a.joint_type == "hinge" for a in humanoid.action)
    assert "obs[0] = qpos[2] root: torso z = height (world)" in humanoid.to_prompt()
    hopper = env_spec("Hopper-v5").to_prompt()
    assert "obs[5] = clip(qvel[0], -10, 10) rootx: torso x velocity (world)" in hopper
    cheetah = env_spec("HalfCheetah-v5").to_prompt()
    assert "world z = 0.7 + qpos[1]" in cheetah  # its rootz slide is 0 at the start height
    with pytest.raises(ValueError, match="unknown environment"):
        env_spec("CartPole-v1")


def test_reward_code_sees_full_state_in_info():
    """The prompt's promise: RewardWrapper adds full qpos/qvel copies to info."""
    seen: dict[str, tuple[int, ...]] = {}
    reward = load_reward("def reward_fn(obs, action, next_obs, info):\n    return 0.0, {}\n")
    inner = reward._compute

    def spy(obs, action, next_obs, info):
        seen.update(qpos=info["qpos"].shape, qvel=info["qvel"].shape)
        return inner(obs, action, next_obs, info)

    reward._compute = spy
    env = make_env("Ant-v5", reward)
    try:
        env.reset(seed=0)
        env.step(env.action_space.sample())
    finally:
        env.close()
    spec = env_spec("Ant-v5")
    assert seen == {"qpos": (spec.nq,), "qvel": (spec.nv,)}


def test_many_threads_asking_at_once_build_the_env_once(monkeypatch):
    # The LLM pool asks from many activity threads at once; one builds, the others wait for it.
    from activities.envs import spec as spec_module

    spec_module._env_spec.cache_clear()
    built: list[str] = []
    real_make = gym.make

    def counting_make(env_id: str, **kwargs):
        built.append(env_id)
        return real_make(env_id, **kwargs)

    monkeypatch.setattr(gym, "make", counting_make)
    with ThreadPoolExecutor(8) as pool:
        specs = list(pool.map(env_spec, ["Swimmer-v5"] * 8))
    assert built == ["Swimmer-v5"]
    assert all(s is specs[0] for s in specs)
