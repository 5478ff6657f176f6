"""A child behind an import that takes 1.5 s (the template forks it only after that), which then
sleeps without writing anything (a closed pipe does not end it).

    python -m tests.activities.runner.slow_probe SLEEP_S
"""

from __future__ import annotations

import sys
import time

time.sleep(1.5)

if __name__ == "__main__":
    time.sleep(float(sys.argv[1]))
