"""The batched side of `policyforge bench-train --candidates K`, one process per core.

    python -m workers.local.bench_batched --spec FILE

FILE is JSON: {"env_id", "timesteps", "seed", "eval_every", "out_dir", "candidates":
[{"name", "source", "overrides"}]}. Each candidate's reward runs in a sandbox process of its
own, as in a session; the candidates train together in one `BatchedPPO` on "threads" threads
(default 1), its networks and update on "device" (default "cpu"; batched/device.py).
Every `eval_every` steps per candidate (and at the end) each candidate plays one deterministic
episode (`batched.evaluate`), its time kept off the training clock. Prints {"event": "eval",
...} lines as they happen, then one {"event": "result", ...} line; models go to
out_dir/<name>/.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from activities.sandbox.client import SandboxClient
from activities.sandbox.reward_client import SandboxRewards
from activities.training.batched.candidates import Candidate
from activities.training.batched.envs import BatchEnvs
from activities.training.batched.evaluate import evaluate_candidates
from activities.training.batched.export import save_candidate
from activities.training.batched.ppo import BatchedPPO
from activities.training.presets import preset_for


def _emit(event: dict[str, Any]) -> None:
    print(json.dumps(event), flush=True)


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Train the spec's candidates together; the result event."""
    threads = int(spec.get("threads", 1))
    torch.set_num_threads(threads)
    env_id, seed = spec["env_id"], int(spec["seed"])
    boxes = [SandboxClient() for _ in spec["candidates"]]
    try:
        candidates = [
            Candidate(
                c["name"],
                SandboxRewards(box, c["source"], f"{c['name']}.py", strict=False),
                preset_for(env_id, c.get("overrides") or {}),
            )
            for c, box in zip(spec["candidates"], boxes, strict=True)
        ]
        ppo = BatchedPPO(
            env_id,
            candidates,
            int(spec["timesteps"]),
            seed,
            threads=threads,
            device=spec.get("device", "cpu"),
        )
        every = int(spec["eval_every"])
        eval_envs = BatchEnvs(env_id, ppo.k, seed)
        clock = {"eval_s": 0.0, "next": every}
        t0 = time.monotonic()

        def evaluate() -> None:
            e0 = time.monotonic()
            results = evaluate_candidates(ppo, seed, eval_envs)
            spent = time.monotonic() - e0
            clock["eval_s"] += spent
            for cand, res in zip(candidates, results, strict=True):
                _emit(
                    {
                        "event": "eval",
                        "candidate": cand.name,
                        "timesteps": ppo.steps_done,
                        "train_wall_s": round(e0 - t0 - clock["eval_s"] + spent, 3),
                        "eval_s": round(spent / ppo.k, 3),
                        **res,
                    }
                )

        def progress(p: BatchedPPO) -> None:
            if p.steps_done >= clock["next"] and p.steps_done < p.timesteps:
                evaluate()
                while clock["next"] <= p.steps_done:
                    clock["next"] += every

        ppo.learn(progress)
        train_wall = time.monotonic() - t0 - clock["eval_s"]
        evaluate()
        out_dir = Path(spec["out_dir"])
        for k, cand in enumerate(candidates):
            save_candidate(ppo, k, out_dir / cand.name)
        return {
            "event": "result",
            "candidates": [c.name for c in candidates],
            "timesteps_done": ppo.steps_done,
            "train_wall_s": round(train_wall, 3),
            "steps_per_second": round(ppo.k * ppo.steps_done / max(train_wall, 1e-9), 1),
            "seconds": {k: round(v, 3) for k, v in ppo.seconds.items()},
            "torch_threads": torch.get_num_threads(),
            "device": str(ppo.device),
            "mean_returns": [
                sum(s.returns[-10:]) / max(len(s.returns[-10:]), 1) for s in ppo.stats
            ],
        }
    finally:
        for box in boxes:
            box.close()


def main(argv: list[str] | None = None) -> int:
    """The command line: run the spec, print the result line."""
    p = argparse.ArgumentParser(prog="python -m workers.local.bench_batched")
    p.add_argument("--spec", required=True, type=Path)
    args = p.parse_args(argv)
    _emit(run(json.loads(args.spec.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
