"""Entry point of the llm worker pool: `python -m workers.pools.llm`."""

from __future__ import annotations

from workers.pools.main import run_pool_process


def main() -> None:
    """Run the llm pool (sessions and LLM calls) against TEMPORAL_ADDRESS."""
    run_pool_process(["llm"])


if __name__ == "__main__":
    main()
