"""The child-process runner that training and judging share.

`child` is the harness every runner process runs: a stage's job module (`python -m
<job module> MODE`) hands it its modes, and it starts the sandbox process for generated code,
confines itself, runs the mode and writes the result. `supervisor` starts a job from a worker or
the CLI and keeps it on a short leash; `protocol` is the wire format between the two.
`baseline_reward` holds the one reward a runner will run unguarded.
"""
