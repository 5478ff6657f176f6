"""The behaviour library: what can be measured on each robot, and bounded rewards built on it.

`primitives` is the one module reward and judge code import (inside the sandbox, as
`import primitives as P`); the offline author composes the same functions, and the code judge's
metrics are computed with them, so a reward term and the criterion judging it mean the same thing.
`layout` is the per-env data behind them, `parts` the primitives of named body parts (head,
hands, feet, knees), `sensors` the trusted side that adds foot, knee and part readings to each
step's info, and `catalog` the list the env spec shows authors. `metrics` measures whole
episodes by named metrics (a speed, a height, uprightness, a turn, a duration, a distance), and
`measured` turns judge code's measured values into verdicts, cross-checked by those metrics (the
judge stage judges with them, the training stage validates judge code with them, the elicitor
lists them).
"""
