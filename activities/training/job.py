"""The training stage's runner: reward code validated, trained under and evaluated, and judge
code validated on contrasting episodes.

    python -m activities.training.job MODE --request REQ.json --out DIR

MODE: validate, train, train_batch (several reward candidates trained together), evaluate
(reward code), validate_judge (judge code, on episodes that must not pass, scored by the
session's reward: activities/training/contrasts.py). The harness (`activities.runner.child`)
does the rest: the sandbox process for the generated code, the confinement, result.json.
Supervisors start a mode by its `ChildJob` (`VALIDATE`, `TRAIN`, `EVALUATE`, `VALIDATE_JUDGE`);
importing this module for them is light (no torch, SB3 or gymnasium: the handlers import what
they need).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from activities.runner import child
from activities.runner.protocol import ChildJob, ChildRequest
from activities.training.memory import physics_reserve_mb
from activities.training.run_spec import EvalJob, TrainJob

if TYPE_CHECKING:
    from activities.training.reward_runtime import ColumnRewards

MODULE = "activities.training.job"
VALIDATE = ChildJob(MODULE, "validate")
TRAIN = ChildJob(MODULE, "train")
EVALUATE = ChildJob(MODULE, "evaluate")
VALIDATE_JUDGE = ChildJob(MODULE, "validate_judge")
EVALUATE_BESIDE = ChildJob(MODULE, "evaluate_beside")
TRAIN_BATCH = ChildJob(MODULE, "train_batch")
# Below training's priority: the evaluators beside training (and their sandboxes) take what
# training leaves of the machine.
NICENESS = 5
EVALUATE_MEMBERS_BESIDE = ChildJob(MODULE, "evaluate_members_beside")


def _rewards(req: ChildRequest, run: child.Run) -> ColumnRewards:
    """The session's reward: in the sandbox; in-process only for the benchmark's own reward."""
    from activities.sandbox.reward_client import SandboxRewards
    from activities.training.checked_shaping import apply as apply_checked_shaping
    from activities.training.reward_runtime import LocalRewards, load_reward

    source = req.reward_source
    if source is None:
        if req.reward_path is None:
            raise ValueError(f"{run.mode} needs reward_source or reward_path")
        source = Path(req.reward_path).read_text()
    # Validation rejects a NaN reward outright; training zeroes and counts the odd one.
    strict = run.mode == "validate"
    if req.unguarded:
        from activities.runner.baseline_reward import RUN_FORWARD

        if source != RUN_FORWARD:
            raise ValueError("unguarded runs take only bench-sandbox's own reward")
        return LocalRewards(load_reward(source, req.reward_filename, strict=strict, guarded=False))
    rewards = SandboxRewards(
        run.sandbox(), source, req.reward_filename, strict=strict, python_layers=req.python_layers
    )
    apply_checked_shaping(rewards, req.reward_shaping, req.reward_filename)
    return rewards


def _one_torch_thread() -> None:
    """One core per run: a second torch thread gives nothing and collapses under load."""
    import torch

    torch.set_num_threads(1)


def train_job(req: ChildRequest, out: Path) -> TrainJob:
    """The training run a request asks for."""
    return TrainJob(
        env_id=req.env_id,
        timesteps=req.timesteps,
        seed=req.seed,
        out_dir=out,
        algo=req.algo,
        ppo_overrides=req.ppo,
        env_kwargs=req.env_kwargs,
        progress_interval_s=req.progress_interval_s,
        checkpoint_every=req.checkpoint_every,
        resume_dir=Path(req.resume_dir) if req.resume_dir else None,
        init_dir=Path(req.init_dir) if req.init_dir else None,
        eval_every=req.eval_every,
        eval_checkpoint_episodes=req.eval_checkpoint_episodes,
        early_eval_steps=req.early_eval_steps,
        eval_max_steps=req.max_steps,
        eval_handoff=req.eval_handoff,
    )


def eval_job(req: ChildRequest, out: Path) -> EvalJob:
    """The evaluation a request asks for (the policy defaults to the output folder's)."""
    return EvalJob(
        env_id=req.env_id,
        model_path=Path(req.model_path) if req.model_path else out / "model.zip",
        vecnormalize_path=(
            Path(req.vecnormalize_path) if req.vecnormalize_path else out / "vecnormalize.npz"
        ),
        out_dir=out,
        seed=req.seed,
        max_steps=req.max_steps,
        record_video=req.record_video,
        video_size=req.video_size,
        env_kwargs=req.env_kwargs,
        algo=req.algo,
    )


def _validate(req: ChildRequest, run: child.Run) -> dict[str, Any]:
    from activities.training.validate import validate

    rewards = _rewards(req, run)
    _check_shaping(req, rewards)  # a bad SHAPING is the reward's error: the fixer repairs it
    result = validate(req.env_id, rewards, req.steps, req.seed, req.env_kwargs)
    # What was checked travels on: later runs apply it, not what the module says then.
    return {**result, "shaping": getattr(rewards, "shaping", None)}


def _check_shaping(req: ChildRequest, rewards: ColumnRewards) -> None:
    """Parse the reward's SHAPING against the env; ShapingError (one line) when it cannot
    apply."""
    raw = getattr(rewards, "shaping", None)
    if raw is None:
        return
    from activities.sandbox.reward_code import RewardLoadError

    if not req.shaping:
        # Refused here, where the fixer sees it, rather than when training starts.
        raise RewardLoadError(
            f"{req.reward_filename}: this session's runs do not apply SHAPING (it trains SAC or "
            "TD3); remove the SHAPING constant"
        )
    from activities.training.batched.shaping import ShapingError, parse
    from activities.training.sim import make_env

    env = make_env(req.env_id, None, req.env_kwargs)
    try:
        dim = int(env.observation_space.shape[0]) if env.observation_space.shape else 0
        limit = int(env.spec.max_episode_steps or 0) if env.spec else 0
        parse(raw, req.env_id, dim, limit or 10**9)
    except ShapingError as exc:
        raise RewardLoadError(f"{req.reward_filename}: {exc}") from None
    finally:
        env.close()


def _train(req: ChildRequest, run: child.Run) -> dict[str, Any]:
    reward = _rewards(req, run)
    if _on_engine(req):
        from activities.training.batched.run import train_single

        return train_single(req, reward, run.out, run.emit, threads=max(1, req.threads))
    _one_torch_thread()
    if getattr(reward, "shaping", None):
        from activities.sandbox.reward_code import RewardLoadError

        # Fail closed rather than train without the shaping the reward asked for.
        raise RewardLoadError(
            f"{req.reward_filename}: SHAPING is applied by PPO runs on the engine "
            f"(this one: algo {req.algo}, engine {req.engine}); drop SHAPING"
        )
    job = train_job(req, run.out)
    if job.algo != "ppo":
        from activities.training import offpolicy

        return offpolicy.train(job, reward, run.emit)
    from activities.training import ppo

    return ppo.train(job, reward, run.emit)


def _on_engine(req: ChildRequest) -> bool:
    """Whether a single run trains on the batched engine: PPO (a warm start too: its SB3 model
    is copied in, batched/warm.py), not resuming a checkpoint the SB3 trainer wrote before an
    upgrade."""
    from activities.runner.protocol import CHECKPOINT_FILES

    legacy = req.resume_dir is not None and (Path(req.resume_dir) / CHECKPOINT_FILES[0]).exists()
    return req.engine == "auto" and req.algo == "ppo" and not legacy


def _train_batch(req: ChildRequest, run: child.Run) -> dict[str, Any]:
    from activities.training.batched.run import train_batch

    return train_batch(req, run.boxes, run.out, run.emit)


def _evaluate(req: ChildRequest, run: child.Run) -> dict[str, Any]:
    from activities.training.rollout import evaluate

    _one_torch_thread()
    return evaluate(eval_job(req, run.out), _rewards(req, run))


def _evaluate_beside(req: ChildRequest, run: child.Run) -> dict[str, Any]:
    from activities.training.side_eval import evaluate_beside

    _one_torch_thread()
    return evaluate_beside(req, _rewards(req, run), run.out, run.emit)


def _evaluate_members_beside(req: ChildRequest, run: child.Run) -> dict[str, Any]:
    from activities.training.side_eval import evaluate_members_beside

    _one_torch_thread()
    return evaluate_members_beside(req, run.boxes, run.out, run.emit)


def _validate_judge(req: ChildRequest, run: child.Run) -> dict[str, Any]:
    """Judge code on the validation episodes (activities/training/contrasts.py), all judged in
    one load of its sandbox; each episode's checked answer and the behaviour library's values
    beside it. The trusted side decides (activities/training/validate_activities.py,
    judge_problem)."""
    from activities.behaviours.measured import library_values
    from activities.sandbox.judge_client import judge_all
    from activities.training.contrasts import episodes

    if req.judge_source is None:
        raise ValueError("judge modes need judge_source")
    played = episodes(req.env_id, _rewards(req, run), req.judge_criteria, req.seed, req.steps)
    judged = judge_all(
        run.judge_sandbox(),  # not the reward's: nothing its module did reaches the judge
        req.judge_source,
        req.judge_filename,
        [e.arrays for e in played],
        req.criteria,
        python_layers=req.python_layers,
    )
    return {
        "steps": sum(e.steps for e in played),
        "judgment": judged[0],
        "episodes": [
            {
                "name": e.name,
                "what": e.what,
                "contrast": e.contrast,
                "steps": e.steps,
                "judgment": answer,
                "library": library_values(e.arrays, req.env_id, req.judge_criteria),
            }
            for e, answer in zip(played, judged, strict=True)
        ],
    }


_ENV = ("gymnasium.envs.mujoco", "activities.training.sim")
_POLICY = ("torch", "stable_baselines3", "activities.training.rollout")
MODES: dict[str, child.ModeSpec] = {
    "validate": child.ModeSpec(
        _validate, (*_ENV, "activities.training.validate"), short=True, unguarded_ok=True
    ),
    "train": child.ModeSpec(
        _train,
        (
            *_ENV,
            *_POLICY,
            "activities.training.ppo",
            "activities.training.offpolicy",
            "activities.training.batched.run",
            "tensorboardX",
        ),
        unguarded_ok=True,
        reserve_mb=physics_reserve_mb,
    ),
    "train_batch": child.ModeSpec(
        _train_batch,
        (
            *_ENV,
            *_POLICY,
            "activities.training.ppo",
            "activities.training.batched.run",
            "tensorboardX",
        ),
        reserve_mb=physics_reserve_mb,
    ),
    "evaluate": child.ModeSpec(_evaluate, (*_ENV, *_POLICY), unguarded_ok=True),
    "evaluate_beside": child.ModeSpec(
        _evaluate_beside, (*_ENV, *_POLICY, "activities.training.side_eval"), niceness=NICENESS
    ),
    "evaluate_members_beside": child.ModeSpec(
        _evaluate_members_beside,
        (*_ENV, *_POLICY, "activities.training.side_eval"),
        niceness=NICENESS,
    ),
    "validate_judge": child.ModeSpec(
        _validate_judge,
        (*_ENV, *_POLICY, "activities.training.contrasts", "activities.behaviours.measured"),
        short=True,
        judge_apart=True,
    ),
}

if __name__ == "__main__":
    sys.exit(child.main(MODULE, MODES))
