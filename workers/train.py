"""Entry point of the train worker pool: `python -m workers.train`."""

from __future__ import annotations

from workers.main import run_pool_process


def main() -> None:
    """Run the train pool (validation, training, evaluation) against TEMPORAL_ADDRESS."""
    run_pool_process(["train"])


if __name__ == "__main__":
    main()
