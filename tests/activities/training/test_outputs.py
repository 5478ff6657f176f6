"""What an RL user opens after a run: scalars, TensorBoard events, evaluation checkpoints (kept
in the training child, or beside it by a second child)."""

from __future__ import annotations

import json

import av
import numpy as np
import pytest
from tensorboardX.proto import event_pb2

from activities.runner.protocol import ChildRequest
from activities.runner.supervisor import run_child
from activities.training.beside import request as beside_request
from activities.training.beside import train_beside
from activities.training.job import EVALUATE_BESIDE, TRAIN
from tests.activities.training.rewards import RUN_FORWARD


def tensorboard_tags(folder) -> set[str]:
    import struct

    tags = set()
    for path in folder.glob("events.out.tfevents.*"):
        data = path.read_bytes()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos : pos + 8])
            event = event_pb2.Event.FromString(data[pos + 12 : pos + 12 + length])
            tags.update(v.tag for v in event.summary.value)
            pos += 12 + length + 4
    return tags


async def test_training_leaves_scalars_tensorboard_and_eval_checkpoints(tmp_path):
    req = ChildRequest(
        env_id="Hopper-v5",
        reward_source=RUN_FORWARD,
        timesteps=2048,
        ppo={"n_steps": 32},  # four updates: one per evaluation checkpoint
        eval_checkpoint_episodes=3,
        max_steps=20,
    )
    events: list[dict] = []
    await run_child(TRAIN, req, tmp_path, events.append, timeout_s=300)

    rows = [
        json.loads(line) for line in (tmp_path / "metrics/scalars.jsonl").read_text().splitlines()
    ]
    for key in (
        "policy_loss",
        "value_loss",
        "entropy_loss",
        "approx_kl",
        "clip_fraction",
        "explained_variance",
        "ep_return_mean",
        "steps_per_second",
        "term_forward",
    ):
        assert key in rows[-1], key  # fmt: skip
    tags = tensorboard_tags(tmp_path / "tensorboard")
    assert {"policyforge/value_loss", "policyforge/ep_return_mean"} <= tags

    assert [e["pct"] for e in events if e.get("event") == "eval_checkpoint"] == [25, 50, 75, 100]
    for pct in (25, 50, 75, 100):
        folder = tmp_path / "evals" / f"pct_{pct}"
        summary = json.loads((folder / "returns.json").read_text())
        assert len(summary["returns"]) == 3 and set(summary["picked"]) == {"p10", "median", "p90"}
        picked = summary["picked"]
        assert picked["p10"]["return"] <= picked["median"]["return"] <= picked["p90"]["return"]
        assert (folder / "model.zip").exists() and (folder / "vecnormalize.npz").exists()
        for name in ("p10", "median", "p90"):
            with np.load(folder / f"{name}.npz") as npz:
                assert 1 <= len(npz["action"]) <= 20 and "qpos" in npz.files
            with av.open(str(folder / f"{name}.mp4")) as video:
                assert sum(1 for _ in video.decode(video=0)) >= 1

    # The checkpoints' share of the run's wall time is measured, for the session's time split.
    run = json.loads((tmp_path / "summary.json").read_text())
    assert 0 < run["eval_checkpoint_seconds"] < run["wall_seconds"]


async def test_checkpoints_kept_beside_training_are_the_ones_kept_in_it(tmp_path):
    req = ChildRequest(
        env_id="Hopper-v5",
        reward_source=RUN_FORWARD,
        # Four updates of 16 x 32 steps: one for each evaluation checkpoint.
        timesteps=2048,
        ppo={"n_steps": 32},
        eval_checkpoint_episodes=3,
        max_steps=20,
    )
    inside = tmp_path / "inside"
    await run_child(TRAIN, req, inside, timeout_s=300)

    handed = tmp_path / "handed"
    side_events: list[dict] = []
    run = await train_beside(
        run_child(TRAIN, req.model_copy(update={"eval_handoff": True}), handed, timeout_s=300),
        run_child(
            EVALUATE_BESIDE,
            beside_request(req, handed, final_eval=True),
            tmp_path / "beside",
            side_events.append,
            timeout_s=300,
        ),
    )
    kept = [e["pct"] for e in side_events if e.get("event") == "eval_checkpoint"]
    assert kept == run.evaluation["checkpoints"] == [25, 50, 75, 100]
    # Training is deterministic: the same policies, the same episodes, the same picks.
    for pct in kept:
        a = json.loads((inside / "evals" / f"pct_{pct}" / "returns.json").read_text())
        b = json.loads((handed / "evals" / f"pct_{pct}" / "returns.json").read_text())
        assert a == b
        with av.open(str(handed / "evals" / f"pct_{pct}" / "median.mp4")) as video:
            assert sum(1 for _ in video.decode(video=0)) >= 1
    # And the final evaluation episode, with its video, from the final policy.
    final = run.evaluation["final"]
    with np.load(tmp_path / "beside" / final["trajectory"]) as npz:
        assert len(npz["action"]) == final["episode_length"] <= 20
        assert float(npz["reward"].sum()) == pytest.approx(final["episode_return"])
    with av.open(str(tmp_path / "beside" / final["video"])) as video:
        assert sum(1 for _ in video.decode(video=0)) == final["frames"] >= 2
