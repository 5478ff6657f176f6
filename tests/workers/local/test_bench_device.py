"""bench-train's --device: the batched side on a GPU beside the same side on the CPU."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from workers.local.bench_candidates import BATCHED_CPU
from workers.local.bench_candidates import table as candidates_table
from workers.local.bench_train import BenchError, bench_device, table

CUDA = torch.cuda.is_available()


def test_the_device_is_checked_before_anything_trains(monkeypatch: pytest.MonkeyPatch):
    assert bench_device("cpu") == "cpu"
    with pytest.raises(BenchError, match=r"^--device: one of cpu, cuda, auto \(got 'tpu'\)$"):
        bench_device("tpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert bench_device("auto") == "cpu"
    with pytest.raises(BenchError, match=r"^--device=cuda: ") as missing:
        bench_device("cuda")
    assert "\n" not in str(missing.value)


def _side(steps_per_second: float) -> dict[str, Any]:
    return {
        "steps_per_second": steps_per_second,
        "train_wall_s": 10.0,
        "final_eval_return": 1.0,
        "best_eval_return": 2.0,
        "time_to_target_s": None,
        "timesteps_to_target": None,
        "evals": [{}],
        "n_envs": 16,
        "torch_threads": 2,
        "physics_share": 0.5,
    }


def test_the_single_run_table_shows_our_gpu_and_cpu_runs_side_by_side():
    out = {
        "target": 1500.0,
        "device": "cuda:0",
        "ours": _side(3000.0),
        "ours_cpu": _side(2000.0),
        "plain": _side(500.0),
        "steps_per_second_ratio": 6.0,
        "physics": {"steps_per_second": 1e4, "procs": 1, "datas_per_process": 1},
    }
    head, speed = table(out)[:2]
    assert head.split() == ["ours", "cuda:0", "ours", "cpu", "plain", "SB3"]
    assert speed.split()[-3:] == ["3,000", "2,000", "500"]


def _candidates_side(device: str | None) -> dict[str, Any]:
    return {
        "wall_s": 10.0,
        "steps_per_second": 100.0,
        "training_steps_per_second": 120.0,
        "reached_target": 1,
        "time_to_target_all_s": None,
        "physics_share": 0.1,
        "training_physics_share": 0.2,
        "final_returns": {"c0": 1.0},
        **({"device": device} if device else {}),
    }


def test_the_candidates_table_labels_the_batched_sides_by_device():
    out = {
        "target": 1500.0,
        "device": "cuda:0",
        "weights": {"c0": {"reward_forward": 1.0, "reward_ctrl": 1.0}},
        "physics": {"steps_per_second": 1e4, "procs": 2, "datas_per_process": 1},
        "batched": _candidates_side("cuda:0"),
        BATCHED_CPU: _candidates_side("cpu"),
        "plain": _candidates_side(None),
    }
    assert candidates_table(out)[0].split() == [
        "batched",
        "cuda:0",
        "batched",
        "cpu",
        "plain",
        "SB3",
    ]


@pytest.mark.slow  # two batched trainings
@pytest.mark.skipif(not CUDA, reason="torch sees no CUDA device")
def test_a_gpu_bench_runs_the_batched_side_on_the_gpu_and_again_on_the_cpu():
    from workers.local.bench_candidates import bench_candidates

    out = bench_candidates(
        "HalfCheetah-v5",
        2048,
        2,
        target=-1e9,
        eval_every=1024,
        procs=2,
        sides=("batched",),
        physics_seconds=0.3,
        device="cuda",
    )
    assert out["device"].startswith("cuda:")
    assert out["batched"]["device"] == out["device"] and out[BATCHED_CPU]["device"] == "cpu"
    for side in ("batched", BATCHED_CPU):
        assert out[side]["steps"] >= 2 * 2048 and out[side]["steps_per_second"] > 0
    assert "batched cpu" in candidates_table(out)[0]
