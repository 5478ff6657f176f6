"""The bounded shapes and the reward forms built on them: every reward form stays in [0, 1] on
any state its robot can be put in, and the env spec lists exactly the primitives that apply."""

from __future__ import annotations

import inspect

import gymnasium as gym
import numpy as np
import pytest

import activities.behaviours.primitives as P
from activities.behaviours.catalog import primitives_for, sample_kwargs
from activities.behaviours.layout import layout
from activities.behaviours.sensors import BodySensors
from activities.behaviours.shaping import SIGMOIDS, tolerance
from activities.envs.catalog import ENVS
from activities.envs.quiet import quiet_mujoco
from activities.envs.spec import env_spec

quiet_mujoco()


@pytest.mark.parametrize("sigmoid", SIGMOIDS)
def test_tolerance_is_one_inside_and_reaches_its_value_at_the_margin(sigmoid):
    assert tolerance(1.5, lower=1.0, upper=2.0, margin=0.5, sigmoid=sigmoid) == 1.0
    at_margin = tolerance(2.5, lower=1.0, upper=2.0, margin=0.5, sigmoid=sigmoid)
    assert at_margin == pytest.approx(0.1)
    below = tolerance(0.5, lower=1.0, upper=2.0, margin=0.5, sigmoid=sigmoid)
    assert below == pytest.approx(0.1)  # symmetric about the nearer bound
    # Monotone falling with the distance, never below 0.
    far = tolerance(np.linspace(2.0, 10.0, 50), 1.0, 2.0, margin=0.5, sigmoid=sigmoid)
    assert np.all(np.diff(far) <= 1e-12) and np.all(far >= 0.0)


def test_tolerance_edges():
    assert tolerance(3.0, lower=2.0, upper=P.INF, margin=0.0) == 1.0
    assert tolerance(1.9, lower=2.0, upper=P.INF, margin=0.0) == 0.0
    assert tolerance(0.0, 1.0, P.INF, margin=1.0, sigmoid="linear", value_at_margin=0.0) == 0.0
    assert isinstance(tolerance(0.3), float)
    assert tolerance(np.zeros((4, 2))).shape == (4, 2)
    with pytest.raises(ValueError, match="lower"):
        tolerance(0.0, lower=1.0, upper=0.0)
    with pytest.raises(ValueError, match="value_at_margin"):
        tolerance(0.0, 1.0, 1.0, margin=1.0, value_at_margin=1.5)
    with pytest.raises(ValueError, match="sigmoid"):
        tolerance(0.0, 1.0, 1.0, margin=1.0, sigmoid="cubic")


@pytest.mark.parametrize("sigmoid", SIGMOIDS)
@pytest.mark.parametrize(
    ("lower", "upper", "margin"),
    [(0.0, 0.0, 1.0), (-P.INF, 0.4, 0.2), (1.0, P.INF, 0.5), (0, 1, 0)],
)
def test_one_number_and_an_array_are_shaped_alike(sigmoid, lower, upper, margin):
    # A reward scored step by step passes plain floats (a fast path), one scored in batches
    # passes arrays: the same value either way, NaN and infinities included.
    rng = np.random.default_rng(1)
    xs = np.concatenate([rng.normal(0.0, 3.0, 300), [np.nan, np.inf, -np.inf, 0.0, 1.0, 0.4]])
    for value_at_margin in (0.1, 0.0) if sigmoid in ("linear", "quadratic") else (0.1, 0.6):
        shaped = tolerance(xs, lower, upper, margin, sigmoid, value_at_margin)
        one_by_one = [
            tolerance(float(x), lower, upper, margin, sigmoid, value_at_margin) for x in xs
        ]
        assert all(type(v) is float for v in one_by_one)
        np.testing.assert_allclose(one_by_one, shaped, rtol=1e-12, equal_nan=True)


def _random_states(env_id: str, n: int, seed: int = 0) -> list[dict]:
    """Steps of a random policy from perturbed starts, read as the reward reads them."""
    env = gym.make(env_id)
    u = env.unwrapped
    sensors = BodySensors(env_id, u.model)
    rng = np.random.default_rng(seed)
    out = []
    env.reset(seed=seed)
    for _ in range(n):
        q = u.data.qpos.copy() + rng.normal(scale=0.5, size=u.model.nq)
        v = rng.normal(scale=3.0, size=u.model.nv)
        if layout(env_id).root == "free":
            q[3:7] /= np.linalg.norm(q[3:7])
        u.set_state(q, v)
        env.step(env.action_space.sample())
        out.append({"qpos": u.data.qpos.copy(), "qvel": u.data.qvel.copy(), "x_velocity": v[0]})
        out[-1].update(sensors.read(u.data))
    env.close()
    return out


@pytest.mark.parametrize("env_id", sorted(ENVS))
def test_every_reward_form_stays_in_0_1_on_any_state(env_id):
    forms = [item for item in primitives_for(env_id) if item.reward]
    assert forms, env_id
    states = _random_states(env_id, 40)
    for item in forms:
        fn = getattr(P, item.name)
        params = list(inspect.signature(fn).parameters)
        if params[:2] != ["env", "data"]:
            continue  # env-independent forms are covered by the tolerance tests
        kwargs = sample_kwargs(fn, env_id) or {}
        if "targets" in params:
            kwargs["targets"] = {P.joint_names(env_id)[0]: 0.3}
        values = [fn(env_id, s, **kwargs) for s in states]
        assert all(0.0 <= v <= 1.0 for v in values), (item.name, min(values), max(values))


def test_the_env_spec_lists_the_primitives_that_apply():
    hopper = env_spec("Hopper-v5").to_prompt()
    assert "## Primitives" in hopper and "import primitives as P" in hopper
    assert "`P.feet_heights(env, data)`" in hopper and "Feet, in the order" in hopper
    assert "pole_angle" not in hopper
    pendulum = env_spec("InvertedPendulum-v5").to_prompt()
    assert "`P.pole_reward(env, data, margin=0.2)`" in pendulum
    assert "forward_velocity" not in pendulum and "Feet" not in pendulum
    names = {item.name for item in primitives_for("Ant-v5")}
    assert {"yaw_rate", "heading_reward", "feet_contact", "upright_reward"} <= names
    assert "knee_heights" not in names  # the Ant's legs have no knee bodies
