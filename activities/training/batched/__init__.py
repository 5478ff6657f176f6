"""Many PPO policies trained in one process: K candidates, each on its own group of envs."""
