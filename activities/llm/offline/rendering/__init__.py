"""Rendering, the last stage: a template match or a composition to source code: the reward (from
the `templates/` files, or composed as code over the behaviour library, with its latex and
summary), and judge code where the built-in judge cannot measure a criterion. It hands the author
and the reviser (the package's entry points) the code they return.
"""
