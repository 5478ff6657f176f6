"""Process entry points shared by the per-pool modules and the CLI."""

from __future__ import annotations

import os

import structlog

from workers.client import connect, run_connected
from workers.logs import configure_logging
from workers.pools.metrics import serves_metrics, worker_runtime
from workers.pools.pools import run_pools
from workers.process_exit import run_and_exit
from workers.settings import Settings

# The device the trainer puts the policy and its update on (the training engine reads it).
TRAIN_DEVICE = "POLICYFORGE_TRAIN_DEVICE"


def claim_gpu() -> None:
    """A GPU train worker trains on CUDA: set POLICYFORGE_TRAIN_DEVICE=cuda for the trainer, or
    end the process with the one line that says which check failed. A device the person set
    is kept as it is (a GPU-queue worker on CPU, in tests) and nothing is checked."""
    if os.environ.get(TRAIN_DEVICE):
        return
    try:
        import torch
    except ImportError as exc:
        raise SystemExit(f"error: worker train --gpu: torch does not import ({exc})") from None
    if not torch.cuda.is_available():
        raise SystemExit(
            f"error: worker train --gpu: torch {torch.__version__} sees no CUDA device "
            "(torch.cuda.is_available() is False); install PyTorch's CUDA build on a machine "
            f"with an NVIDIA GPU, or set {TRAIN_DEVICE} to serve the GPU queue on another device"
        )
    os.environ[TRAIN_DEVICE] = "cuda"


def run_pool_process(names: list[str], *, gpu: bool = False) -> None:
    """Connect to TEMPORAL_ADDRESS and run the named pools; nothing embedded is started.
    `gpu`: the train pool serves the GPU queue (refused, in one line, without CUDA).

    Called from `python -m workers.pools.<pool>` and `policyforge worker`: ends the process.
    """
    run_and_exit(lambda: _run_pools(names, gpu))


def _run_pools(names: list[str], gpu: bool) -> None:
    if gpu:
        if "train" not in names:
            raise SystemExit("error: --gpu is for the train pool: policyforge worker train --gpu")
        claim_gpu()
    os.environ.setdefault("MUJOCO_GL", "egl")
    settings = Settings()
    configure_logging(settings.log_level)
    log = structlog.get_logger()

    runtime = worker_runtime(settings.metrics_port)

    async def go() -> None:
        client = await connect(settings, runtime=runtime)
        log.info(
            "worker started",
            pools=names,
            gpu=gpu,
            train_device=os.environ.get(TRAIN_DEVICE) if "train" in names else None,
            address=client.service_client.config.target_host,
            namespace=client.namespace,
            metrics_port=settings.metrics_port if serves_metrics(runtime) else None,
        )
        await run_pools(client, settings, names, gpu=gpu)
        log.info("worker stopped", pools=names)

    run_connected(go)
