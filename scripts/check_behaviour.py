"""Replay a session's policy and check the behaviour from the simulator itself, apart from the
judge: `python scripts/check_behaviour.py SESSION CHECK [--episodes N]`.

The judge measures through the behaviour library; this reads MuJoCo's own state (the torso's
qpos, the ankle capsules' lowest points, the free joint's angular velocity) so that a pass can
be confirmed by a second, independent measurement. Checks (Ant-v5):

- crawl_low: travels forward at least 0.4 m/s with the torso at most 0.45 m up (second half)
- front_left_up: front left foot at least 0.2 m up, the other three within 0.08 m of the floor,
  horizontal speed at most 0.2 m/s (second half)
- spin_ccw: yaw rate at least 1.05 rad/s counter-clockwise, drift at most 0.2 m/s, upright,
  over the whole episode
- spin_sustained: the same spin, kept up over both halves of the episode, wherever it goes
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

import numpy as np

# Ant-v5's ankle capsules by leg, as its XML places them (+x forward, +y left).
ANT_FEET = {
    "front_left": "left_ankle_geom",
    "back_left": "right_ankle_geom",
    "back_right": "third_ankle_geom",
    "front_right": "fourth_ankle_geom",
}


def lowest_point(model: Any, data: Any, geom: str) -> float:
    """The lowest z of a capsule geom: its centre, its axis end, less its radius."""
    gid = model.geom(geom).id
    radius, half = model.geom_size[gid][:2]
    axis_z = data.geom_xmat[gid].reshape(3, 3)[2, 2]
    return float(data.geom_xpos[gid][2] - abs(axis_z) * half - radius)


def episode(policy: Any, seed: int) -> dict[str, np.ndarray]:
    env = policy.make_env()
    rows: dict[str, list[float]] = {k: [] for k in ("x", "y", "z", "vx", "vy", "yaw_rate", "up")}
    for leg in ANT_FEET:
        rows[leg] = []
    try:
        obs, _ = env.reset(seed=seed)
        sim = env.unwrapped
        for _ in range(1000):
            action, _ = policy.predict(obs)
            obs, _, terminated, truncated, _ = env.step(action)
            qpos, qvel = sim.data.qpos, sim.data.qvel
            rows["x"].append(float(qpos[0]))
            rows["y"].append(float(qpos[1]))
            rows["z"].append(float(qpos[2]))
            rows["vx"].append(float(qvel[0]))
            rows["vy"].append(float(qvel[1]))
            # Angular velocity of the free joint in the world frame: its z part is the yaw rate.
            rows["yaw_rate"].append(float(sim.data.cvel[1][2]))
            w, x, y, z = qpos[3:7]
            rows["up"].append(float(1 - 2 * (x * x + y * y)))  # torso z-axis . world z
            for leg, geom in ANT_FEET.items():
                rows[leg].append(lowest_point(sim.model, sim.data, geom))
            if terminated or truncated:
                break
    finally:
        env.close()
    return {k: np.asarray(v) for k, v in rows.items()}


def _late(a: np.ndarray) -> np.ndarray:
    return a[len(a) // 2 :]


def crawl_low(e: dict[str, np.ndarray]) -> dict[str, float | bool]:
    speed, z = float(np.mean(e["vx"])), float(np.mean(_late(e["z"])))
    return {"x_speed": speed, "late_torso_z": z, "ok": speed >= 0.4 and z <= 0.45}


def front_left_up(e: dict[str, np.ndarray]) -> dict[str, float | bool]:
    lifted = float(np.mean(_late(e["front_left"])))
    others = max(float(np.mean(_late(e[k]))) for k in ANT_FEET if k != "front_left")
    drift = float(np.mean(np.hypot(_late(e["vx"]), _late(e["vy"]))))
    ok = lifted >= 0.2 and others <= 0.08 and drift <= 0.2
    return {"front_left_foot_z": lifted, "highest_other_foot_z": others, "drift": drift, "ok": ok}


def spin_ccw(e: dict[str, np.ndarray]) -> dict[str, float | bool]:
    rate = float(np.mean(e["yaw_rate"]))
    drift = float(np.mean(np.hypot(e["vx"], e["vy"])))
    up = float(np.mean(e["up"]))
    # Where it ends against where it started: a spinning torso sways, which the mean speed
    # counts, but it does not leave its spot.
    away = float(np.hypot(e["x"][-1] - e["x"][0], e["y"][-1] - e["y"][0]))
    ok = rate >= 1.05 and drift <= 0.2 and up >= 0.8 and len(e["z"]) == 1000
    return {
        "yaw_rate": rate,
        "drift": drift,
        "end_from_start": away,
        "uprightness": up,
        "steps": len(e["z"]),
        "ok": ok,
    }


def spin_sustained(e: dict[str, np.ndarray]) -> dict[str, float | bool]:
    """A spin kept up over the whole episode, wherever it goes."""
    rate, up = float(np.mean(e["yaw_rate"])), float(np.mean(e["up"]))
    late = float(np.mean(_late(e["yaw_rate"])))
    ok = rate >= 1.05 and late >= 1.05 and up >= 0.8 and len(e["z"]) == 1000
    return {
        "yaw_rate": rate,
        "late_yaw_rate": late,
        "uprightness": up,
        "steps": len(e["z"]),
        "ok": ok,
    }


CHECKS: dict[str, Callable[[dict[str, np.ndarray]], dict[str, float | bool]]] = {
    "crawl_low": crawl_low,
    "front_left_up": front_left_up,
    "spin_ccw": spin_ccw,
    "spin_sustained": spin_sustained,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("session")
    parser.add_argument("check", choices=sorted(CHECKS))
    parser.add_argument("--episodes", type=int, default=3)
    args = parser.parse_args()
    from workers.cli.policies import load_policy

    policy = load_policy(args.session)
    results = []
    for seed in range(args.episodes):
        got = CHECKS[args.check](episode(policy, seed))
        results.append(
            {"seed": seed, **{k: v if isinstance(v, bool) else round(v, 3) for k, v in got.items()}}
        )
        print(json.dumps(results[-1]))
    passed = all(r["ok"] for r in results)
    print(f"{args.session} {args.check}: {'OK' if passed else 'NOT MET'} on all {len(results)}")
    raise SystemExit(0 if passed else 1)


if __name__ == "__main__":
    main()
