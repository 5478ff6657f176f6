"""Entry point of the train worker pool: `python -m workers.pools.train [--gpu]`."""

from __future__ import annotations

import argparse

from workers.pools.main import run_pool_process


def main(argv: list[str] | None = None) -> None:
    """Run the train pool (validation, training, evaluation) against TEMPORAL_ADDRESS; with
    --gpu, on the GPU queue as well as the shared one."""
    parser = argparse.ArgumentParser(prog="python -m workers.pools.train")
    parser.add_argument("--gpu", action="store_true", help="serve the GPU training queue (CUDA)")
    run_pool_process(["train"], gpu=parser.parse_args(argv).gpu)


if __name__ == "__main__":
    main()
