"""The web dashboard (`policyforge ui`, embedded in `policyforge dev`): sessions live from
Temporal, their artifacts from S3, the steering buttons, and benchmark tables.

app.py holds the routes, auth.py who may use them, sessions.py and benchmarks.py what is read
from Temporal, artifacts.py what is read from S3, formula.py the reward formulas, server.py
how it is served.
"""
