"""The behaviour library: what can be measured on each robot, and bounded rewards built on it.

`primitives` is the one module reward and judge code import (inside the sandbox, as
`import primitives as P`); the offline author composes the same functions, and the code judge's
metrics are computed with them, so a reward term and the criterion judging it mean the same thing.
`layout` is the per-env data behind them, `sensors` the trusted side that adds foot and knee
readings to each step's info, and `catalog` the list the env spec shows authors.
"""
