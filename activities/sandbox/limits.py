"""The sandbox process's resource limits, shared by the side that applies them (`confine.py`)
and the side that watches them (`watchdog.py`) and names them in a code fault.

Generated code needs one thread, a few MB of scratch (it may not open files at all behind the
Python layers) and CPU only while it answers a call; each limit is far above that and far below
what would hurt the machine.
"""

from __future__ import annotations

# Tasks (threads) of the sandbox's own uid: RLIMIT_NPROC, which counts every thread.
MAX_THREADS = 32
# Scratch is a tmpfs of this size and file count in the sandbox's mount namespace (no disk, no
# reserved blocks), or, where no mount namespace can be had, a folder the watchdog measures.
SCRATCH_MB = 64
SCRATCH_FILES = 4096
# Reported among the missing layers where scratch could not be a tmpfs (no mount namespace):
# not a layer of its own, since the runner's watchdog then measures the folder instead.
SCRATCH_TMPFS = "scratch-tmpfs"
FILE_MB = 64  # any one file (RLIMIT_FSIZE); stderr is a pipe the client drains, not a file
# CPU time the sandbox may use outside its calls (it has none to do there): a fixed slack for
# start-up and clean-up, plus a share of the CPU time its main thread used inside them (a call
# runs from the client's first byte of the request to the last of the answer). CPU time, not
# the calls' wall time: code that sleeps in its calls banks nothing to burn between them.
IDLE_CPU_S = 2.0
IDLE_CPU_SHARE = 0.1
