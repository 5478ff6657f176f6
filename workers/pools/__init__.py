"""The worker pools: the processes that poll Temporal's task queues and run the workflows and
activities (llm: sessions and LLM calls; train: validation, training, evaluation; judge).

Each pool runs as its own process, `python -m workers.pools.llm`, `python -m workers.pools.train
[--gpu]`, `python -m workers.pools.judge`, or `policyforge worker llm train judge` (what the
compose file's worker services run): main.py connects to TEMPORAL_ADDRESS and runs pools.py's
workers, with metrics.py's Temporal runtime (Prometheus endpoint, SDK log lines).
`policyforge dev` and `policyforge demo` (workers/dev/) run all three in their own process.
"""
