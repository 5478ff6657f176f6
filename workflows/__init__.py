"""The session workflow and its contracts (`workflows/contracts/`): the models the workflow, the
activities and the CLI exchange.

Workflow code here is deterministic and imports no activity code: it runs in the Temporal
sandbox and is replayed from recorded histories.
"""
