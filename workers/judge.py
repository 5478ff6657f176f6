"""Entry point of the judge worker pool: `python -m workers.judge`."""

from __future__ import annotations

from workers.main import run_pool_process


def main() -> None:
    run_pool_process(["judge"])


if __name__ == "__main__":
    main()
