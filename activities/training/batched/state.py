"""A batch's whole training state as files, for resuming after the process dies.

batch_state.npz holds the arrays (every candidate's parameters and Adam moments, the
normalisation statistics, torch's RNG states: the CPU's, and the GPU's for an engine on one)
and batch_state.json the counters, numpy's RNG state and each candidate's episode record;
neither is a pickle, so a checkpoint downloaded from storage is read as data only. The arrays
are saved from host copies and loaded onto the engine's device, whichever it is (a checkpoint
moves between CPU and GPU engines). A resumed batch starts fresh episodes (as SB3's resume
does); everything it learned carries over.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from activities.runner.protocol import BATCH_CHECKPOINT_FILES
from activities.training.batched.candidates import CandidateStats
from activities.training.batched.device import rng_state, set_rng_state

if TYPE_CHECKING:
    from activities.training.batched.ppo import BatchedPPO

STATE_FILES = BATCH_CHECKPOINT_FILES


def save_state(ppo: BatchedPPO, folder: Path, extra: dict[str, Any] | None = None) -> None:
    """Write the batch's state into `folder` (see the module docstring), with the caller's
    own JSON `extra` (load_state gives it back)."""
    folder.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    for i, (p, m, v) in enumerate(zip(ppo.params, ppo.adam_m, ppo.adam_v, strict=True)):
        arrays[f"param_{i}"] = p.detach().cpu().numpy()
        arrays[f"adam_m_{i}"] = m.cpu().numpy()
        arrays[f"adam_v_{i}"] = v.cpu().numpy()
    norm = ppo.norm
    for name, stats in (("obs", norm.obs_rms), ("ret", norm.ret_rms)):
        arrays[f"{name}_mean"], arrays[f"{name}_var"] = stats.mean, stats.var
        arrays[f"{name}_count"] = stats.count
    arrays.update(rng_state(ppo.device))
    with open(folder / STATE_FILES[0], "wb") as f:
        np.savez(f, **arrays)  # type: ignore[arg-type]  # numpy's stub: a key could be allow_pickle
    meta = {
        "candidates": [c.name for c in ppo.candidates],
        "steps_done": ppo.steps_done,
        "updates": ppo.updates,
        "adam_t": ppo.adam_t,
        "numpy_rng": ppo.rng.bit_generator.state,
        "stats": [asdict(s) for s in ppo.stats],
        "seconds": ppo.seconds,
        "extra": extra or {},
    }
    (folder / STATE_FILES[1]).write_text(json.dumps(meta))


def load_state(ppo: BatchedPPO, folder: Path) -> tuple[int, dict[str, Any]]:
    """Restore a state `save_state` wrote for the same candidates; the step count it had and
    the caller's `extra`. ValueError when the files belong to another batch."""
    meta: dict[str, Any] = json.loads((folder / STATE_FILES[1]).read_text())
    names = [c.name for c in ppo.candidates]
    if meta["candidates"] != names:
        raise ValueError(f"checkpoint is for candidates {meta['candidates']}, not {names}")
    with np.load(folder / STATE_FILES[0], allow_pickle=False) as npz:
        arrays = {key: npz[key] for key in npz.files}
    with torch.no_grad():
        for i, (p, m, v) in enumerate(zip(ppo.params, ppo.adam_m, ppo.adam_v, strict=True)):
            saved = arrays[f"param_{i}"]
            if saved.shape != tuple(p.shape):
                raise ValueError(f"checkpoint parameter {i} has shape {saved.shape}, not {p.shape}")
            p.copy_(torch.from_numpy(saved).to(p.device))
            m.copy_(torch.from_numpy(arrays[f"adam_m_{i}"]).to(m.device))
            v.copy_(torch.from_numpy(arrays[f"adam_v_{i}"]).to(v.device))
    norm = ppo.norm
    for name, stats in (("obs", norm.obs_rms), ("ret", norm.ret_rms)):
        stats.mean, stats.var = arrays[f"{name}_mean"], arrays[f"{name}_var"]
        stats.count = arrays[f"{name}_count"]
    set_rng_state(ppo.device, arrays)
    ppo.steps_done, ppo.updates, ppo.adam_t = meta["steps_done"], meta["updates"], meta["adam_t"]
    ppo.rng.bit_generator.state = meta["numpy_rng"]
    ppo.stats = [CandidateStats(**s) for s in meta["stats"]]
    ppo.seconds = {k: float(v) for k, v in meta["seconds"].items()}
    # Fresh episodes: the envs were reset when the batch was built, under other statistics.
    ppo.refresh_obs()
    return ppo.steps_done, dict(meta.get("extra", {}))
