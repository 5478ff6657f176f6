"""`python -m tests.chaos`: the chaos drill from a checkout (see tests/chaos/__init__.py)."""

from tests.chaos.run import main

main()
