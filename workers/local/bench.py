"""Measure a preset end to end through the real child: `python -m workers.local.bench`.

Trains with the demo's reward ("run forward": x velocity minus 0.1 |a|^2), evaluates one
deterministic episode, and prints timesteps, wall seconds, steps/s and the evaluation's mean
x velocity (the figure the demo's judge checks).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from activities.runner.baseline_reward import RUN_FORWARD
from workers.local.train import train_local

PLANAR = ("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5")


def main(argv: list[str] | None = None) -> None:
    """Train and evaluate the demo's reward locally; print one JSON line of figures."""
    p = argparse.ArgumentParser(prog="python -m workers.local.bench")
    p.add_argument("--env", default="HalfCheetah-v5")
    p.add_argument("--timesteps", type=int, default=300_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ppo", default="{}", help="JSON overrides of the preset")
    p.add_argument("--no-video", action="store_true")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pf-bench-") as tmp:
        reward = Path(tmp) / "reward_fn.py"
        reward.write_text(RUN_FORWARD)
        t0 = time.monotonic()
        summary = train_local(
            reward,
            args.env,
            args.timesteps,
            args.seed,
            Path(tmp) / "out",
            lambda n, r: print(f"  {n:>9,} steps  mean return {r if r is None else round(r, 1)}"),
            record_video=not args.no_video,
            ppo=json.loads(args.ppo),
        )
        total = time.monotonic() - t0
        with np.load(Path(tmp) / "out" / "trajectories" / "eval.npz") as npz:
            xvel = float(npz["info_x_velocity"].mean()) if "info_x_velocity" in npz else None
            # cos(pitch) of the planar walkers' torso: 1 upright, -1 on its back.
            upright = float(np.cos(npz["qpos"][:, 2]).mean()) if args.env in PLANAR else None
    ev = summary["evaluation"]
    print(
        json.dumps(
            {
                "env_id": args.env,
                "seed": args.seed,
                "timesteps_done": summary["timesteps_done"],
                "train_wall_s": summary["wall_seconds"],
                "steps_per_second": summary["steps_per_second"],
                "eval_mean_x_velocity": xvel,
                "eval_mean_uprightness": upright,
                "eval_return": ev["episode_return"],
                "eval_length": ev["episode_length"],
                "eval_child_s": ev.get("child_seconds"),
                "total_s": round(total, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
