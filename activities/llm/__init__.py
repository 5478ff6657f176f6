"""The LLM stage: activities that ask language models (or the offline templates) to write
and judge, the agents behind them, and the providers they call."""
