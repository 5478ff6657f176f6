"""Entry point of the judge worker pool: `python -m workers.pools.judge`."""

from __future__ import annotations

from workers.pools.main import run_pool_process


def main() -> None:
    """Run the judge pool (judging rollouts, the agents' tools) against TEMPORAL_ADDRESS."""
    run_pool_process(["judge"])


if __name__ == "__main__":
    main()
