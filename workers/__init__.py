"""Processes, one folder for each kind: `pools/` the worker pools, `cli/` the `policyforge`
command, `dashboard/` the web dashboard, `dev/` the embedded dev services, `local/` the local
runs and benches. What every kind shares stays here: the settings (`settings.py`), the Temporal
client (`client.py`), the logging (`logs.py`) and the process exit (`process_exit.py`)."""
