"""The contracts every layer shares, one module per concept.

The workflow, the activities, the workers and the CLI exchange these pydantic models (as JSON,
through Temporal's pydantic data converter) and these names (queues, S3 keys, search
attributes). Every module here is imported inside the Temporal workflow sandbox: each depends on
pydantic and the standard library only (no numpy, torch, gymnasium, boto3, and no activity
module). Activities, workers and tests import from these modules directly.

- `context`: the base of every contract and the session context LLM requests carry
- `usage`: what an LLM call cost, and the sums over an iteration or a session
- `queues`: the worker pools' task queue names
- `session`: what a person asks for (and its validation), the status, the records, the result
- `llm`: the LLM activities' requests and results (authoring, review, fixes, revision, ...)
- `training`: reward code, validation, training and evaluation requests and results
- `judging`: criteria, judge requests and judgments (trajectory and video)
- `tools`: the tool calls agents make between LLM calls
- `steering`: what a person sends a running session (approve, feedback, abort, extend)
- `keys`: the S3 key layout of a session's artifacts

The custom search attributes are defined once in workflows/search.py.

Payloads are JSON matched by field name: a class may move between modules, but renaming a
field, changing a default or its type breaks recorded histories (tests/workflows/histories).
"""
