"""The child-process runner that training and judging share.

`child` is the runner process (`python -m activities.runner.child MODE`): it validates, trains,
evaluates or judges, with the generated code in a sandbox process of its own. `supervisor`
starts it from a worker or the CLI and keeps it on a short leash; `protocol` is the wire format
between the two. `baseline_reward` holds the one reward the runner will run unguarded.
"""
