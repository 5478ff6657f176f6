"""The evaluator beside training: a second child that keeps the evaluation checkpoints the
training child hands over, and plays the final evaluation episode, on the core training leaves
idle. Run inside that child only (job mode `evaluate_beside`).

train_policy starts it next to the training child (`eval_handoff`) and it watches that child's
output folder: for each `handoff/pct_<p>.json` it loads the policy saved in `evals/pct_<p>/`,
plays and keeps the checkpoint there (`eval_checkpoints.keep_checkpoint`) and emits
{"event": "eval_checkpoint", "pct", "timesteps"}. Once `summary.json` appears (training is over,
its model.zip and vecnormalize.npz written) it plays the final evaluation episode (what the
evaluate mode plays: the same policy call, seed and step cap) into its own output folder, draws
its video on RENDER_THREADS threads while it keeps the last checkpoint (held back until then),
and ends. It runs at a lower CPU priority, its sandbox too (job.NICENESS), so that training
keeps its core while both run.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stable_baselines3.common.vec_env import DummyVecEnv

from activities.runner.protocol import ChildRequest
from activities.sandbox.client import SandboxClient
from activities.sandbox.reward_code import RewardLoadError
from activities.training import policy_io
from activities.training.checked_shaping import member_rewards
from activities.training.eval_checkpoints import HANDOFF, checkpoint_folder, keep_checkpoint
from activities.training.evaluation import deterministic_act
from activities.training.phase_clock import model_inputs
from activities.training.reward_runtime import Rewards
from activities.training.rollout import (
    evaluation_figures,
    load_model,
    play_evaluation,
    render_evaluation,
)
from activities.training.run_spec import EvalJob
from activities.training.sim import make_env
from workflows.contracts.keys import MODEL, SUMMARY, VECNORMALIZE

Emit = Callable[[dict[str, Any]], None]
POLL_S = 0.1


def evaluate_beside(req: ChildRequest, reward: Rewards, out: Path, emit: Emit) -> dict[str, Any]:
    """Keep the handed-over checkpoints and, when asked, the final evaluation (see the module
    docstring); the checkpoints kept, the final evaluation's figures and the working time."""
    if req.watch_dir is None:
        raise ValueError("evaluate_beside needs watch_dir (the training child's output folder)")
    watch = Path(req.watch_dir)
    # One Mesa thread per GL context: parallel drawing comes from our renderer threads, and
    # while training runs the evaluator keeps to one core. Read when the first context is made.
    os.environ["LP_NUM_THREADS"] = "1"
    kept: list[int] = []
    # (what, seconds since the evaluator started when it was done) for the worker's log.
    timeline: list[tuple[str, float]] = []
    t0 = time.monotonic()
    work = 0.0
    final: dict[str, Any] | None = None
    while True:
        # Read before the markers: the last checkpoint is handed over before training ends.
        over = (watch / SUMMARY).exists()
        todo = [m for m in _markers(watch) if m["pct"] not in kept]
        if req.final_eval and not over:
            # The last checkpoint waits for the final episode (moments later): its video, the
            # longest piece of work, then draws while the checkpoint is kept.
            todo = [m for m in todo if m["pct"] < 100]
        started = time.monotonic()
        if over:
            timeline.append(("training over", round(started - t0, 2)))
        video: threading.Thread | None = None
        if over and req.final_eval:
            final, video = _final(req, reward, watch, out)
            timeline.append(("final episode", round(time.monotonic() - t0, 2)))
        for marker in todo:
            _keep(req, reward, watch, marker)
            kept.append(marker["pct"])
            timeline.append((f"checkpoint {marker['pct']}%", round(time.monotonic() - t0, 2)))
            emit({"event": "eval_checkpoint", "pct": marker["pct"], "timesteps": marker["ts"]})
        if video is not None:
            video.join()
            timeline.append(("final video", round(time.monotonic() - t0, 2)))
        if todo or over:
            work += time.monotonic() - started
        if over:
            break
        time.sleep(POLL_S)
    if final is not None and "error" in final:
        raise final["error"]
    return {
        "checkpoints": kept,
        "final": final,
        "work_seconds": round(work, 2),
        "timeline": timeline,
    }


def evaluate_members_beside(
    req: ChildRequest, boxes: list[SandboxClient], out: Path, emit: Emit
) -> dict[str, Any]:
    """The evaluator beside a batch (`batched/run.py` with eval_handoff): keeps every member's
    handed-over checkpoints (watch_dir/<member>/handoff/) with that member's own reward, in
    training order, until every member's summary.json is there; the checkpoints kept per member
    and the working time. The final evaluations are evaluate_policy's, one per run."""
    if req.watch_dir is None:
        raise ValueError("evaluate_members_beside needs watch_dir (the batch's output folder)")
    if len(boxes) != len(req.members):
        raise ValueError(f"{len(req.members)} members need as many sandboxes, got {len(boxes)}")
    watch = Path(req.watch_dir)
    os.environ["LP_NUM_THREADS"] = "1"  # see evaluate_beside
    rewards = {m.name: member_rewards(box, m) for m, box in zip(req.members, boxes, strict=True)}
    kept: dict[str, list[int]] = {m.name: [] for m in req.members}
    # Members whose reward failed here: the batch drops them too (batched/ppo.py), and the
    # others' checkpoints are still kept.
    failed: set[str] = set()
    work = 0.0
    while True:
        over = all((watch / name / SUMMARY).exists() for name in kept)
        todo = sorted(
            (marker["pct"], name, marker)
            for name in kept
            if name not in failed
            for marker in _markers(watch / name)
            if marker["pct"] not in kept[name]
        )
        started = time.monotonic()
        for pct, name, marker in todo:
            if name in failed:
                continue
            try:
                _keep(req, rewards[name], watch / name, marker)
            except RewardLoadError:
                failed.add(name)  # the batch reports its error (batched/ppo.py)
                continue
            kept[name].append(pct)
            emit(
                {"event": "eval_checkpoint", "member": name, "pct": pct, "timesteps": marker["ts"]}
            )
        if todo or over:
            work += time.monotonic() - started
        if over:
            break
        time.sleep(POLL_S)
    return {"checkpoints": kept, "work_seconds": round(work, 2)}


def _markers(watch: Path) -> list[dict[str, Any]]:
    """The handed-over checkpoints so far, in training order."""
    folder = watch / HANDOFF
    found = []
    for path in sorted(folder.glob("pct_*.json")) if folder.is_dir() else []:
        raw = json.loads(path.read_text())
        found.append({"pct": int(raw["pct"]), "fraction": raw["fraction"], "ts": raw["timesteps"]})
    return sorted(found, key=lambda m: m["pct"])


def _keep(req: ChildRequest, reward: Rewards, watch: Path, marker: dict[str, Any]) -> None:
    folder = checkpoint_folder(watch, marker["pct"])
    keep_checkpoint(
        folder,
        req.env_id,
        reward,
        saved_policy(req, folder),
        episodes=req.eval_checkpoint_episodes,
        max_steps=req.max_steps,
        fraction=marker["fraction"],
        timesteps=marker["ts"],
    )


def saved_policy(req: ChildRequest, folder: Path) -> Callable[[Any], Any]:
    """The deterministic action of the policy saved in `folder`, through its saved statistics."""
    env = make_env(req.env_id, None, req.env_kwargs)
    model = load_model(req.algo, folder / MODEL)
    declared = DummyVecEnv([lambda: model_inputs(env, model)])
    vecnorm = policy_io.load_vecnormalize(folder / VECNORMALIZE, declared)
    vecnorm.training = False
    vecnorm.norm_reward = False
    return deterministic_act(model, vecnorm)


def _final(
    req: ChildRequest, reward: Rewards, watch: Path, out: Path
) -> tuple[dict[str, Any], threading.Thread | None]:
    """Play the final evaluation episode now (the reward's sandbox is used by one thread at a
    time) and start drawing its video; its figures (filled in once the video thread ends)."""
    job = EvalJob(
        env_id=req.env_id,
        model_path=watch / MODEL,
        vecnormalize_path=watch / VECNORMALIZE,
        out_dir=out,
        seed=req.seed,
        max_steps=req.max_steps,
        record_video=req.record_video,
        video_size=req.video_size,
        env_kwargs=req.env_kwargs,
        algo=req.algo,
    )
    arrays, stats = play_evaluation(job, reward)
    figures = evaluation_figures(job, arrays, stats, 0)
    if not job.record_video:
        return figures, None

    def draw() -> None:
        try:
            figures["frames"] = render_evaluation(job, arrays)
        except Exception as exc:  # noqa: BLE001 - raised again on the main thread
            figures["error"] = exc

    thread = threading.Thread(target=draw, name="final-video", daemon=True)
    thread.start()
    return figures, thread
