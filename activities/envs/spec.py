"""Env specs for LLM prompts, read off the live Gymnasium MuJoCo v5 environments.

`env_spec(env_id)` builds the real env and derives from its MuJoCo model, data and attributes
the observation layout (every index: source array and entry, joint or body, meaning), the
action layout, the info keys, the healthy/termination rules and the env's own reward.
What cannot be read off the env (info meanings, reward formulas, a few constants `_get_obs`
hard-codes) lives in `meanings`. tests/activities/envs/test_spec.py checks every
index against live data.

This module builds and caches the spec; `spec_model` is what a spec holds (`EnvSpec` and its
entries), `spec_reader` reads it off the live env, and `spec_model` writes it as prompt text.
"""

from __future__ import annotations

import functools
import threading

from activities.envs.catalog import facts
from activities.envs.spec_model import EnvSpec
from activities.envs.spec_reader import _build


def env_spec(env_id: str) -> EnvSpec:
    """The env's spec, read off a live instance (built once per process, by one thread: the
    LLM pool asks from many activity threads at once)."""
    with _SPEC_LOCK:
        return _env_spec(env_id)


_SPEC_LOCK = threading.Lock()


@functools.cache
def _env_spec(env_id: str) -> EnvSpec:
    facts(env_id)  # unknown ids fail here with the catalog's message
    import gymnasium as gym  # lazy: importing this module stays cheap

    from activities.envs.quiet import quiet_mujoco

    quiet_mujoco()
    env = gym.make(env_id)
    try:
        return _build(env_id, env)
    finally:
        env.close()
