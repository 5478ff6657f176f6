"""The training stage's runner module: its jobs, its request models, and a light import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from activities.judging import job as judging_job
from activities.runner.protocol import ChildRequest
from activities.training import job
from activities.training.run_spec import EvalJob, TrainJob


def test_each_job_names_its_module_and_a_mode_it_runs() -> None:
    for each in (job.VALIDATE, job.TRAIN, job.EVALUATE, job.VALIDATE_JUDGE):
        assert each.module == job.MODULE and each.mode in job.MODES
    assert judging_job.JUDGE.module == judging_job.MODULE
    assert set(judging_job.MODES) == {"judge"}
    # Short modes get the tighter limits; only reward modes may run the bench's own reward bare.
    assert {m for m, s in job.MODES.items() if s.short} == {"validate", "validate_judge"}
    assert {m for m, s in job.MODES.items() if s.unguarded_ok} == {"validate", "train", "evaluate"}
    assert not judging_job.MODES["judge"].unguarded_ok


def test_the_request_becomes_one_train_job(tmp_path: Path) -> None:
    req = ChildRequest(
        env_id="Hopper-v5",
        reward_source="x",
        timesteps=4096,
        seed=3,
        algo="sac",
        ppo={"n_epochs": 10},
        env_kwargs={"frame_skip": 2},
        checkpoint_every=1024,
        resume_dir="/r",
        init_dir="/i",
        eval_every=512,
        eval_checkpoint_episodes=2,
        max_steps=100,
    )
    assert job.train_job(req, tmp_path) == TrainJob(
        env_id="Hopper-v5",
        timesteps=4096,
        seed=3,
        out_dir=tmp_path,
        algo="sac",
        ppo_overrides={"n_epochs": 10},
        env_kwargs={"frame_skip": 2},
        progress_interval_s=2.0,
        checkpoint_every=1024,
        resume_dir=Path("/r"),
        init_dir=Path("/i"),
        eval_every=512,
        eval_checkpoint_episodes=2,
        eval_max_steps=100,
    )
    bare = job.train_job(ChildRequest(env_id="Hopper-v5"), tmp_path)
    assert bare.resume_dir is None and bare.init_dir is None and bare.algo == "ppo"


def test_evaluation_defaults_to_the_output_folders_policy(tmp_path: Path) -> None:
    got = job.eval_job(ChildRequest(env_id="Hopper-v5", record_video=False), tmp_path)
    assert got == EvalJob(
        env_id="Hopper-v5",
        model_path=tmp_path / "model.zip",
        vecnormalize_path=tmp_path / "vecnormalize.npz",
        out_dir=tmp_path,
        record_video=False,
    )
    given = ChildRequest(env_id="Hopper-v5", model_path="/m.zip", vecnormalize_path="/v.npz")
    assert job.eval_job(given, tmp_path).model_path == Path("/m.zip")
    assert job.eval_job(given, tmp_path).vecnormalize_path == Path("/v.npz")


def test_supervisors_import_the_job_modules_without_the_trainer() -> None:
    code = (
        "import sys, activities.training.job, activities.judging.job; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'torch', 'stable_baselines3', 'gymnasium', 'mujoco'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"
