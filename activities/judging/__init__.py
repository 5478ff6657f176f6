"""The judging stage: the built-in code judge (`code_judge`, `metrics`), the judge-pool
activities, the read-only session tools agents call, and the runner of LLM-written judge code
(`job`)."""
