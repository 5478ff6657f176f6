"""The Gymnasium MuJoCo v5 environments as the other rooms see them.

`catalog`: pure facts (no gymnasium import) that authors, judges and the trainer rely on;
`spec`: the env spec for LLM prompts, read off the live environments; `meanings`: what `spec`
cannot read off the model (what the info keys mean, reward and termination rules as text).
"""
