"""A child for the launcher's tests: prints what it is, then sleeps or exits.

python -m tests.activities.runner.probe_child STATUS [SLEEP_S]
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    print(
        json.dumps(
            {
                "pid": os.getpid(),
                "ppid": os.getppid(),
                "sid": os.getsid(0),
                "pgid": os.getpgid(0),
                "cwd": os.getcwd(),
                "env": dict(os.environ),
                "comm": Path("/proc/self/comm").read_text().strip(),
                "argv": sys.argv[1:],
                "torch_loaded": "torch" in sys.modules,
            }
        ),
        flush=True,
    )
    print("to stderr", file=sys.stderr, flush=True)
    if len(argv) > 1:
        time.sleep(float(argv[1]))
    return int(argv[0])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
