"""The batched engine on a torch device: the CPU through the device code (what CI runs), a GPU
against the CPU where torch sees one, checkpoints and exports across devices, and the
POLICYFORGE_TRAIN_DEVICE setting from the worker to the child."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from pydantic import ValidationError
from stable_baselines3.common.vec_env import DummyVecEnv
from temporalio.exceptions import ApplicationError

from activities.runner.baseline_reward import RUN_FORWARD
from activities.runner.protocol import TRAIN_DEVICE_ENV, ChildRequest
from activities.training.batched.candidates import Candidate
from activities.training.batched.device import DeviceError, HostLink, resolve_device
from activities.training.batched.export import save_candidate
from activities.training.batched.ppo import BatchedPPO
from activities.training.batched.state import STATE_FILES, load_state, save_state
from activities.training.evaluation import deterministic_act
from activities.training.policy_io import load_vecnormalize
from activities.training.presets import preset_for
from activities.training.reward_runtime import LocalRewards, load_reward
from activities.training.rollout import load_model
from activities.training.sim import make_env

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="torch sees no CUDA device")
UPDATE = 16 * 64  # steps per update and candidate (16 envs x n_steps 64)


def _engine(device: str, timesteps: int = 2 * UPDATE) -> BatchedPPO:
    """Two Hopper candidates with their own learning rates (Hopper's episodes end early, so
    a short run has returns to compare)."""
    presets = [
        preset_for("Hopper-v5", {"n_steps": 64}),
        preset_for("Hopper-v5", {"n_steps": 64, "learning_rate": 1e-3}),
    ]
    rewards = [LocalRewards(load_reward(RUN_FORWARD, "reward.py", guarded=False)) for _ in presets]
    cands = [
        Candidate(f"c{i}", r, p) for i, (r, p) in enumerate(zip(rewards, presets, strict=True))
    ]
    return BatchedPPO("Hopper-v5", cands, timesteps, seed=3, device=device)


def _cpu_noise(ppo: BatchedPPO) -> None:
    """Exploration noise from a CPU generator of its own, whatever the device: two engines on
    different devices then explore alike, and only their arithmetic differs."""
    gen = torch.Generator().manual_seed(11)
    ppo.policy.noise = lambda mean: torch.randn(mean.shape, generator=gen).to(mean.device)


def _trained(device: str, prepare: Callable[[BatchedPPO], None]) -> dict[str, Any]:
    ppo = _engine(device)
    prepare(ppo)
    ppo.learn()
    out = {
        "returns": [np.array(s.returns) for s in ppo.stats],
        "params": [p.detach().cpu().clone() for p in ppo.params],
        "losses": [s.train["loss"] for s in ppo.stats],
        "device": str(ppo.device),
    }
    ppo.close()
    return out


def test_a_cpu_engine_trains_alike_through_the_gpus_copy_path():
    # The GPU's path (staged host buffers, one copy back per step), taken on the CPU, must
    # hand the rollout the same actions, log-probabilities and values as the CPU's own: the
    # same returns, losses and parameters.
    def staged(ppo: BatchedPPO) -> None:
        ppo.link = HostLink(ppo.device, staged=True)

    plain = _trained("cpu", lambda _ppo: None)
    through = _trained("cpu", staged)
    assert plain["device"] == through["device"] == "cpu"
    assert all(len(r) > 0 for r in plain["returns"])
    for a, b in zip(plain["returns"], through["returns"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(plain["losses"], through["losses"], rtol=1e-6)
    for a, b in zip(plain["params"], through["params"], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


@needs_cuda
def test_a_gpu_engine_trains_as_the_cpu_engine():
    cpu = _trained("cpu", _cpu_noise)
    gpu = _trained("cuda", _cpu_noise)
    assert gpu["device"].startswith("cuda:")
    # float32 on another device sums in another order, which MuJoCo can amplify over an
    # episode: close, not equal (an H200 gave 1e-8 apart in returns, 5e-8 in parameters).
    for a, b in zip(cpu["returns"], gpu["returns"], strict=True):
        assert len(a) > 0 and len(b) > 0
        assert np.mean(b) == pytest.approx(np.mean(a), rel=1e-2)
    for a, b in zip(cpu["params"], gpu["params"], strict=True):
        torch.testing.assert_close(a, b, rtol=0.0, atol=1e-3)


def _state_round_trip(saved_on: str, loaded_on: str, tmp_path: Path) -> None:
    first = _engine(saved_on, timesteps=3 * UPDATE)
    first.iteration()
    save_state(first, tmp_path, {"note": 1})
    second = _engine(loaded_on, timesteps=3 * UPDATE)
    steps, extra = load_state(second, tmp_path)
    assert steps == UPDATE and extra == {"note": 1} and second.adam_t == first.adam_t
    pairs = [
        *zip(first.params, second.params, strict=True),
        *zip(first.adam_m, second.adam_m, strict=True),
        *zip(first.adam_v, second.adam_v, strict=True),
    ]
    for a, b in pairs:
        assert b.device == second.device
        assert torch.equal(a.detach().cpu(), b.detach().cpu())
    with np.load(tmp_path / STATE_FILES[0]) as npz:
        assert ("cuda_rng" in npz.files) == (first.device.type == "cuda")
    if first.device.type == second.device.type == "cuda":
        assert torch.equal(torch.cuda.get_rng_state(first.device), torch.cuda.get_rng_state())
    second.learn()  # and trains on from there, on its own device
    assert second.steps_done == 3 * UPDATE
    first.close()
    second.close()


def test_a_checkpoint_saves_and_resumes_through_the_device_code(tmp_path: Path):
    _state_round_trip("cpu", "cpu", tmp_path)


@needs_cuda
@pytest.mark.parametrize(
    ("saved_on", "loaded_on"), [("cuda", "cpu"), ("cpu", "cuda"), ("cuda", "cuda")]
)
def test_a_checkpoint_moves_between_gpu_and_cpu_engines(
    saved_on: str, loaded_on: str, tmp_path: Path
):
    _state_round_trip(saved_on, loaded_on, tmp_path)


@needs_cuda
def test_a_gpu_engine_exports_a_plain_cpu_policy_and_keeps_its_noise(tmp_path: Path):
    ppo = _engine("cuda")
    ppo.iteration()
    save_candidate(ppo, 1, tmp_path / "c1")
    model = load_model("ppo", tmp_path / "c1" / "model.zip")
    assert model.device.type == "cpu"
    env = make_env("Hopper-v5", None)
    obs = np.array([env.reset(seed=s)[0] for s in range(6)])
    venv = load_vecnormalize(
        tmp_path / "c1" / "vecnormalize.npz", DummyVecEnv([lambda: make_env("Hopper-v5", None)])
    )
    batched = ppo.deterministic_actions(np.repeat(obs[None], 2, axis=0))[1]
    np.testing.assert_allclose(deterministic_act(model, venv)(obs), batched, atol=1e-5)
    # SB3 reseeds torch when it builds the model, the GPU's generator included: the export
    # must leave the noise training draws on the device as it was.
    state = torch.cuda.get_rng_state(ppo.device)
    save_candidate(ppo, 0, tmp_path / "c0")
    assert torch.equal(torch.cuda.get_rng_state(ppo.device), state)
    ppo.close()


@needs_cuda
def test_bf16_updates_run_under_the_devices_autocast():
    ppo = _engine("cuda", timesteps=UPDATE)
    ppo.bf16 = True
    ppo.learn()
    assert all(np.isfinite(s.train["loss"]) for s in ppo.stats)
    ppo.close()


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_cuda)])
def test_a_runs_summary_records_the_device_it_trained_on(device: str, tmp_path: Path):
    from activities.training.batched.run import train_members

    req = ChildRequest(
        env_id="Hopper-v5", timesteps=512, seed=0, ppo={"n_steps": 32}, device=device
    )
    rewards = LocalRewards(load_reward(RUN_FORWARD, "reward.py", guarded=False))
    cand = Candidate("run", rewards, preset_for("Hopper-v5", {"n_steps": 32}))
    result = train_members(req, [cand], [tmp_path], tmp_path, lambda _event: None)
    engine = result["members"]["run"]["engine"]
    assert engine["device"] == ("cpu" if device == "cpu" else "cuda:0")


def test_device_names_resolve_and_a_missing_gpu_fails_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
):
    from activities.training.batched import device

    assert resolve_device("cpu") == torch.device("cpu")

    def no_probe() -> bool:
        raise AssertionError("CUDA probed under a limited address space")

    # Under the training child's address-space limit, auto takes the CPU without probing CUDA
    # (a probe would spend the limit on CUDA's reservations).
    monkeypatch.setattr(device, "_address_space_mb", lambda: 4096)
    monkeypatch.setattr(torch.cuda, "is_available", no_probe)
    assert resolve_device("auto") == torch.device("cpu")
    monkeypatch.setattr(device, "_address_space_mb", lambda: None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")  # auto: the CPU where there is no GPU
    with pytest.raises(DeviceError) as missing:
        resolve_device("cuda")
    message = str(missing.value)
    assert message.startswith(f"{TRAIN_DEVICE_ENV}=cuda: ") and "\n" not in message
    with pytest.raises(DeviceError, match=r"^--device: one of cpu, cuda, auto \(got 'gpu'\)$"):
        resolve_device("gpu", "--device")
    with pytest.raises(DeviceError, match="POLICYFORGE_TRAIN_DEVICE=cuda"):
        _engine("cuda")  # before any env or sandbox is built


def test_child_requests_take_only_known_devices():
    assert ChildRequest(env_id="Hopper-v5").device == "cpu"
    for name in ("cpu", "cuda", "auto"):
        assert ChildRequest(env_id="Hopper-v5", device=name).device == name
    with pytest.raises(ValidationError) as bad:
        ChildRequest(env_id="Hopper-v5", device="gpu")
    [error] = bad.value.errors()
    assert error["loc"] == ("device",)
    assert error["msg"] == "Value error, device: one of cpu, cuda, auto (got 'gpu')"


def test_the_worker_setting_names_the_training_device(monkeypatch: pytest.MonkeyPatch):
    from activities.training.train_activity import train_device

    monkeypatch.delenv(TRAIN_DEVICE_ENV, raising=False)
    assert train_device() == "cpu"
    for raw, want in (("cuda", "cuda"), (" AUTO ", "auto"), ("", "cpu")):
        monkeypatch.setenv(TRAIN_DEVICE_ENV, raw)
        assert train_device() == want
    monkeypatch.setenv(TRAIN_DEVICE_ENV, "gpu")
    with pytest.raises(ApplicationError) as bad:
        train_device()
    assert bad.value.message == "POLICYFORGE_TRAIN_DEVICE: one of cpu, cuda, auto (got 'gpu')"


@pytest.mark.skipif(CUDA, reason="a machine with CUDA trains on it")
async def test_a_gpu_worker_setting_without_cuda_fails_the_run_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
):
    # The activity puts the worker's setting in the child's request; the real child, finding
    # no CUDA, fails closed in one line naming the setting (no silent CPU run).
    import asyncio

    from temporalio.testing import ActivityEnvironment

    from activities.training import activity_io, checked_shaping, job, train_activity
    from workflows.contracts.training import TrainRequest

    real_run_child = train_activity.run_child
    asked: list[ChildRequest] = []

    async def run_child(mode, req, out, *args, **kwargs):  # noqa: ANN001, ANN202 - a stand-in
        if mode != job.TRAIN:
            await asyncio.sleep(3600)  # the evaluator beside training: cancelled at the failure
        asked.append(req)
        return await real_run_child(mode, req, out, *args, **kwargs)

    async def reward_text(_store: object, _key: str) -> str:
        return RUN_FORWARD

    monkeypatch.setattr(train_activity, "run_child", run_child)
    monkeypatch.setattr(activity_io, "get_text", reward_text)

    async def no_record(*_args: object) -> None:  # no S3 here: no checked SHAPING either
        return None

    monkeypatch.setattr(checked_shaping, "load", no_record)
    monkeypatch.setenv(TRAIN_DEVICE_ENV, "cuda")
    req = TrainRequest(
        session_id="s",
        iteration=1,
        run_name="c0_default_seed_0",
        env_id="Hopper-v5",
        reward_key="sessions/s/iter_1/reward_fn.py",
        timesteps=1024,
    )
    with pytest.raises(ApplicationError) as failed:
        await ActivityEnvironment().run(train_activity.train_policy, req)
    assert [r.device for r in asked] == ["cuda"]
    message = failed.value.message
    assert f"{TRAIN_DEVICE_ENV}=cuda: " in message and "\n" not in message, message
    assert failed.value.type == "TrainingFailed", message  # the machine's, not the reward's
