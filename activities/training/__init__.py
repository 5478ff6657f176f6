"""The training stage: reward validation, PPO / SAC / TD3 training and evaluation under the
session reward. The train-pool activities (`activities`) start the stage's runner (`job`) in a
child process, where the trainer, the evaluator and the policy files' code run."""
