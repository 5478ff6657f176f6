"""The embedded dev services: one process on one machine, with nothing set up.

`policyforge dev` (main.py) starts an embedded Temporal dev server and SeaweedFS S3
(services.py), all three worker pools (workers/pools/) and the dashboard in its own process,
and records where they listen (dev_record.py) for the commands run beside it.
`policyforge demo` (demo.py) does the same for one session end to end, then prints where its
wall time went (timing.py) and stops.
"""
