"""Where the batched engine's networks run: the torch device, and the copies to and from it.

Physics, normalisation, GAE and the rewards stay on the host (numpy, every core); the policy's
forward passes, the PPO update and Adam's state live on the engine's device. On a GPU a
rollout step copies the observations host->device once, through a pinned buffer (a direct DMA,
no staging copy), and the actions, log-probabilities and values back in one copy; an update
moves its rollout buffers over once. On the CPU the same calls hand numpy's memory to torch and
back without copying, so a CPU engine computes exactly what it did before devices existed.
"""

from __future__ import annotations

import resource

import numpy as np
import torch

from activities.runner.protocol import TRAIN_DEVICE_ENV as DEVICE_ENV
from activities.runner.protocol import TRAIN_DEVICES as CHOICES


class DeviceError(ValueError):
    """The device asked for cannot be used here; the message is one line naming the setting."""


def resolve_device(device: str | torch.device, setting: str = DEVICE_ENV) -> torch.device:
    """The torch device for "cpu", "cuda" (or "cuda:N", a torch.device) or "auto" (the GPU
    where torch sees one, else the CPU), a GPU with its index ("cuda:0"). A GPU asked for where
    torch sees none is an error naming `setting`, never a silent CPU run."""
    if device == "auto":
        # CUDA cannot start under a limited address space, and trying spends the limit on its
        # reservations (the run then fails later, out of memory): "auto" takes the CPU there.
        usable = _address_space_mb() is None and torch.cuda.is_available()
        device = "cuda" if usable else "cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise DeviceError(f"{setting}: one of {', '.join(CHOICES)} (got {device!r})") from None
    if dev.type == "cpu":
        return torch.device("cpu")
    if dev.type != "cuda":
        raise DeviceError(f"{setting}: one of {', '.join(CHOICES)} (got {device!r})")
    if not torch.cuda.is_available():
        raise DeviceError(
            f"{setting}={device}: {_why_no_cuda()}; use cpu, or auto for a GPU only where "
            "there is one"
        )
    # The current device without starting a CUDA context where none is yet (a bench process
    # that only checks the device forks workers afterwards).
    current = torch.cuda.current_device() if torch.cuda.is_initialized() else 0
    index = current if dev.index is None else dev.index
    if index >= torch.cuda.device_count():
        raise DeviceError(
            f"{setting}={device}: torch sees {torch.cuda.device_count()} CUDA device(s)"
        )
    return torch.device("cuda", index)


def _why_no_cuda() -> str:
    if torch.version.cuda is None:
        return f"this torch ({torch.__version__}) is built without CUDA"
    limit = _address_space_mb()
    if limit is not None:
        # The training child limits its own address space, which CUDA's start-up reserves far
        # beyond: the limit, not the machine, is then what hides the GPU.
        return (
            f"torch sees no CUDA device (this process's address space is limited to "
            f"{limit} MB, which CUDA cannot start under: POLICYFORGE_SANDBOX_MEMORY_MB=0 "
            "lifts it)"
        )
    return "torch sees no CUDA device on this machine"


def _address_space_mb() -> int | None:
    """This process's address-space limit (RLIMIT_AS) in MB; None when unlimited."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft >> 20


class HostLink:
    """The copies between host arrays and the engine's device (see the module docstring)."""

    def __init__(self, device: torch.device, staged: bool | None = None) -> None:
        self.device = device
        self.pin = device.type == "cuda"
        # Staged: through host buffers and one copy back per step, as on a GPU; a CPU engine
        # takes that path only when asked (tests run the GPU's path with it).
        self.staged = self.pin if staged is None else staged
        self._buffers: dict[str, torch.Tensor] = {}
        self._copied: dict[str, torch.cuda.Event] = {}

    def to_device(self, name: str, array: np.ndarray) -> torch.Tensor:
        """A host array on the device, staged through the buffer `name` (pinned on a GPU, one
        per caller, reused step after step); unstaged, numpy's memory itself."""
        host = torch.from_numpy(array)
        if not self.staged:
            return host
        buffer = self._buffers.get(name)
        if buffer is None or buffer.shape != host.shape or buffer.dtype != host.dtype:
            buffer = torch.empty(host.shape, dtype=host.dtype, pin_memory=self.pin)
            self._buffers[name] = buffer
        copied = self._copied.get(name)
        if copied is None and self.pin:
            copied = self._copied[name] = torch.cuda.Event()
        if copied is not None:
            copied.synchronize()  # the last copy out of this buffer has finished reading it
        buffer.copy_(host)
        out = buffer.to(self.device, non_blocking=True, copy=True)
        if copied is not None:
            copied.record()
        return out

    def to_host(self, *tensors: torch.Tensor) -> list[np.ndarray]:
        """Float32 tensors on the device as host arrays: staged, in one copy; unstaged, views
        of the tensors themselves."""
        if not self.staged:
            return [t.numpy() for t in tensors]
        flat = torch.cat([t.reshape(-1) for t in tensors]).cpu().numpy()
        out: list[np.ndarray] = []
        start = 0
        for t in tensors:
            out.append(flat[start : start + t.numel()].reshape(t.shape))
            start += t.numel()
        return out

    def batch(self, array: np.ndarray) -> torch.Tensor:
        """A rollout buffer on the device for the update (once per update: no staging)."""
        return torch.from_numpy(array).to(self.device)


def rng_state(device: torch.device) -> dict[str, np.ndarray]:
    """torch's generator states the engine draws from: the CPU's, and the GPU's when it runs
    on one (its exploration noise comes from the device's generator)."""
    out = {"torch_rng": torch.get_rng_state().numpy()}
    if device.type == "cuda":
        out["cuda_rng"] = torch.cuda.get_rng_state(device).numpy()
    return out


def set_rng_state(device: torch.device, arrays: dict[str, np.ndarray]) -> None:
    """Restore what `rng_state` saved. A GPU engine resuming a CPU engine's checkpoint keeps
    its device generator as seeded (nothing was saved for it), and a CPU engine ignores a GPU's."""
    torch.set_rng_state(torch.from_numpy(arrays["torch_rng"]))
    if device.type == "cuda" and "cuda_rng" in arrays:
        torch.cuda.set_rng_state(torch.from_numpy(arrays["cuda_rng"]), device)
