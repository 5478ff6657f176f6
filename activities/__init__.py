"""Every side effect of a session, as Temporal activities and the code they run.

The stages `llm`, `training` and `judging` build on the shared packages (`artifacts`, `logs`,
`envs`, `sandbox`, `runner`) and import none of each other (tests/test_layout.py).
"""
