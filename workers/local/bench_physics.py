"""The bench's ceiling: the env's bare physics, measured in the same run as the trainers.

Each of `procs` processes loads the env's MuJoCo model once and steps `n_datas` copies of its
state with zero controls, `frame_skip` physics steps per env step (`mj_step(..., nstep=...)`),
no policy, no reward, no observation, no reset: what a trainer's env stepping can never beat on
this machine. The rate is env steps per second across the processes. Machines differ in speed
by the hour, so a trainer's speed is only compared with the physics measured beside it.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

DATAS_PER_PROCESS = 64


def _step_for(env_id: str, n_datas: int, seconds: float) -> tuple[int, float]:
    """(env steps taken, seconds spent) by one process stepping `n_datas` states."""
    import gymnasium as gym
    import mujoco

    env = gym.make(env_id)
    base: Any = env.unwrapped
    model, frame_skip = base.model, int(base.frame_skip)
    datas = [mujoco.MjData(model) for _ in range(n_datas)]
    for data in datas:
        mujoco.mj_resetData(model, data)
    env.close()
    steps = 0
    began = time.perf_counter()
    while (elapsed := time.perf_counter() - began) < seconds:
        for data in datas:
            mujoco.mj_step(model, data, nstep=frame_skip)
        steps += n_datas
    return steps, elapsed


def bare_physics(
    env_id: str, procs: int, *, seconds: float = 3.0, n_datas: int = DATAS_PER_PROCESS
) -> dict[str, Any]:
    """The env's bare physics on `procs` processes at once: env steps/s in all and per process."""
    if procs < 1 or seconds <= 0 or n_datas < 1:
        raise ValueError(f"procs, seconds and n_datas must be positive ({procs}, {seconds})")
    # Fresh interpreters: the caller may hold torch's threads, which a fork would inherit.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(procs, mp_context=context) as pool:
        runs = list(pool.map(_step_for, [env_id] * procs, [n_datas] * procs, [seconds] * procs))
    rates = [steps / max(elapsed, 1e-9) for steps, elapsed in runs]
    return {
        "env_id": env_id,
        "procs": procs,
        "datas_per_process": n_datas,
        "steps_per_second": round(sum(rates), 1),
        "per_process": round(sum(rates) / procs, 1),
    }


def share(steps_per_second: float, physics: dict[str, Any]) -> float:
    """A trainer's steps/s as a fraction of the bare physics measured beside it."""
    return round(steps_per_second / max(physics["steps_per_second"], 1e-9), 3)


def physics_line(physics: dict[str, Any]) -> str:
    """The table's line saying what the shares are of."""
    return (
        f"bare physics (zero actions, no policy, {physics['procs']} process(es) x "
        f"{physics['datas_per_process']} envs): {physics['steps_per_second']:,.0f} env steps/s"
    )
