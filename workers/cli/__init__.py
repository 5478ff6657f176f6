"""The `policyforge` command: one short process per command, in a person's shell or a
container (`policyforge` is the installed script; `python -m workers.cli` is the same).

main.py parses the arguments and dispatches; sessions.py (the session client, which the
dashboard and `policyforge.Session` use too), session_state.py, render.py and session_list.py
start, follow, steer and list sessions on Temporal; play.py and policies.py play a trained
policy; lessons.py and bench.py are `lessons` and `bench`; local_commands.py the commands that
need no server (their work is in workers/local/); input_checks.py checks every command's input.
`dev`, `worker` and `demo` hand the process over to workers/dev/ and workers/pools/.
"""
