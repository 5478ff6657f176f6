"""The child process for real: validate, a tiny train + evaluate, failures, cancellation."""

from __future__ import annotations

import asyncio
import glob
import json
import os
from pathlib import Path

import av
import numpy as np
import pytest

from activities.envs.catalog import facts
from activities.runner.protocol import ChildFailed, ChildRequest
from activities.runner.supervisor import run_child
from activities.training.job import TRAIN, VALIDATE
from activities.training.reward_runtime import RewardLoadError
from tests.activities.training.rewards import BAD_SUM, NAN, PRINTS, RAISES_LINE_7, RUN_FORWARD
from workers.local.train import train_local

ENV = "HalfCheetah-v5"
EVAL_STEPS = 40


def _req(source: str, **kw) -> ChildRequest:
    return ChildRequest(env_id=ENV, reward_source=source, **kw)


async def test_validate_reports_term_magnitudes(tmp_path: Path):
    # PRINTS writes to stdout from the reward: the progress stream must survive it.
    result = await run_child(VALIDATE, _req(PRINTS, steps=32), tmp_path)
    assert result["ok"] and result["steps"] == 32
    assert set(result["term_magnitudes"]) == {"forward"}
    assert result["term_magnitudes"]["forward"] > 0


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (RAISES_LINE_7, "reward_fn.py line 7: ZeroDivisionError: float division by zero"),
        (NAN, "reward is not finite"),
        (BAD_SUM, "differs from the sum of its terms"),
        ("def reward_fn(obs, action:\n", "reward_fn.py does not parse: line 1"),
    ],
)
async def test_validate_blames_the_reward_in_one_line(tmp_path: Path, source: str, expected: str):
    with pytest.raises(ChildFailed) as err:
        await run_child(VALIDATE, _req(source, steps=8), tmp_path)
    assert err.value.reward_fault
    assert expected in err.value.message and "\n" not in err.value.message
    assert json.loads((tmp_path / "result.json").read_text())["ok"] is False


async def test_cancel_kills_the_child_promptly(tmp_path: Path):
    seen = asyncio.Event()

    def on_event(event: dict) -> None:
        if event.get("event") == "progress" and event["timesteps"] > 0:
            seen.set()

    task = asyncio.create_task(
        run_child(
            TRAIN, _req(RUN_FORWARD, timesteps=10**7, progress_interval_s=0.2), tmp_path, on_event
        )
    )
    await asyncio.wait_for(seen.wait(), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    assert not _processes_mentioning(str(tmp_path))


def _processes_mentioning(text: str) -> list[str]:
    """Processes whose command line or working folder holds `text` (a child forked from the
    template has the template's command line, but works in its output folder)."""
    found = []
    for proc in glob.glob("/proc/[0-9]*"):
        try:
            cmdline = Path(proc, "cmdline").read_bytes().decode(errors="replace")
            cwd = os.readlink(Path(proc, "cwd"))
        except OSError:
            continue
        if text in cmdline or text in cwd:
            found.append(f"{proc}: {cmdline}")
    return found


def test_train_local_trains_and_evaluates(tmp_path: Path):
    reward = tmp_path / "reward_fn.py"
    reward.write_text(RUN_FORWARD)
    out = tmp_path / "run"
    sb3_before = set(glob.glob("/tmp/SB3-*"))
    progress: list[tuple[int, float | None]] = []

    summary = train_local(
        reward, ENV, 2048, 0, out, lambda n, r: progress.append((n, r)), max_eval_steps=EVAL_STEPS
    )

    assert set(glob.glob("/tmp/SB3-*")) == sb3_before, "SB3 left a /tmp/SB3-* folder"
    assert progress and progress[-1][0] >= 2048
    assert summary["env_id"] == ENV and summary["timesteps_done"] >= 2048
    assert summary["steps_per_second"] > 0 and summary["wall_seconds"] > 0
    assert set(summary["term_means"]) == {"forward", "ctrl"}
    assert summary["hyperparameters"]["n_envs"] >= 1 and "still_improving" in summary
    for name in ("model.zip", "vecnormalize.npz", "summary.json", "evaluation.json"):
        assert (out / name).is_file(), name
    rows = [
        json.loads(line) for line in (out / "metrics" / "scalars.jsonl").read_text().splitlines()
    ]
    assert rows and rows[-1]["timesteps"] >= 2048
    for key in ("policy_loss", "value_loss", "entropy_loss", "approx_kl", "clip_fraction"):
        assert key in rows[-1], key
    assert {"explained_variance", "steps_per_second", "term_forward", "term_ctrl"} <= set(rows[-1])

    ev = summary["evaluation"]
    assert ev["episode_length"] == EVAL_STEPS and not ev["terminated"]

    with av.open(str(out / "videos" / "eval.mp4")) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(frames) == EVAL_STEPS + 1  # the reset frame, then one per step (dt 0.05: 20 fps)
    assert frames[0].shape == (480, 480, 3) and frames[0].std() > 0

    spec = facts(ENV)
    with np.load(out / "trajectories" / "eval.npz", allow_pickle=False) as npz:
        T = EVAL_STEPS
        shapes = {
            "obs": (T, spec.obs_dim),
            "next_obs": (T, spec.obs_dim),
            "action": (T, spec.act_dim),
            "reward": (T,),
            "env_reward": (T,),
            "qpos": (T, spec.nq),
            "qvel": (T, spec.nv),
            "terminated": (T,),
            "truncated": (T,),
            "term_forward": (T,),
            "term_ctrl": (T,),
            **{f"info_{k}": (T,) for k in spec.info_keys},
            # HalfCheetah's two feet and two knees (activities/behaviours/sensors.py).
            "feet_z": (T, 2),
            "feet_contact": (T, 2),
            "knees_z": (T, 2),
            # x, y, z of its five named parts (head, both feet and knees: behaviours/parts.py).
            "parts_pos": (T, 15),
        }
        assert set(npz.files) == set(shapes) | {"meta_env_id", "meta_dt"}
        for key, shape in shapes.items():
            assert npz[key].shape == shape, key
        assert npz["terminated"].dtype == bool
        assert str(npz["meta_env_id"]) == ENV and float(npz["meta_dt"]) == pytest.approx(spec.dt)
        np.testing.assert_allclose(npz["reward"], npz["term_forward"] + npz["term_ctrl"])
        np.testing.assert_allclose(npz["obs"][1:], npz["next_obs"][:-1])
        assert ev["episode_return"] == pytest.approx(float(npz["reward"].sum()))


def test_train_local_reward_failure_is_a_reward_load_error(tmp_path: Path):
    reward = tmp_path / "reward_fn.py"
    reward.write_text(RAISES_LINE_7)
    with pytest.raises(RewardLoadError, match=r"reward_fn.py line 7: ZeroDivisionError"):
        train_local(reward, ENV, 1024, 0, tmp_path / "run", None, max_eval_steps=5)
