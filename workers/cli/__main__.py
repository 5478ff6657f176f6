"""`python -m workers.cli`: the `policyforge` command (workers/cli/main.py)."""

from workers.cli.main import main

main()
