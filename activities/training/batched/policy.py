"""K Gaussian actor-critic MLPs with their parameters stacked: one batched matmul per layer.

Candidate k's actor and critic are the same networks Stable-Baselines3's `MlpPolicy` builds for
PPO (separate actor and critic MLPs, a state-independent log std), with weights stored as
(K, in, out) so that a forward for every candidate is one `baddbmm` per layer. Their
initialisation follows SB3's: orthogonal (gains sqrt 2, 0.01 for the action layer, 1 for the
value layer, zero biases) with `ortho_init`, PyTorch's default Linear init without.
`to_sb3` (export.py) copies candidate k into a plain SB3 policy.
"""

from __future__ import annotations

import math

import torch
from torch import nn

ACTIVATIONS = {"tanh": torch.tanh, "relu": torch.relu}


class StackedMLP(nn.Module):
    """K MLPs of the same shape; hidden layers use `activation`, the last is linear."""

    def __init__(
        self, k: int, sizes: list[int], activation: str, ortho: bool, out_gain: float
    ) -> None:
        super().__init__()
        self.act = ACTIVATIONS[activation]
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            w = torch.empty(k, fan_out, fan_in)
            b = torch.empty(k, 1, fan_out)
            last = i == len(sizes) - 2
            for j in range(k):
                if ortho:
                    nn.init.orthogonal_(w[j], gain=out_gain if last else math.sqrt(2))
                    b[j].zero_()
                else:  # nn.Linear's reset_parameters
                    nn.init.kaiming_uniform_(w[j], a=math.sqrt(5))
                    bound = 1 / math.sqrt(fan_in)
                    nn.init.uniform_(b[j], -bound, bound)
            self.weights.append(nn.Parameter(w.transpose(1, 2).contiguous()))
            self.biases.append(nn.Parameter(b))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(K, B, in) -> (K, B, out)."""
        # The parameters as a plain list: indexing a ParameterList costs more than a small
        # layer's matmul. Training updates them in place, so the list stays current.
        layers = self.__dict__.get("_layers")
        if layers is None:
            layers = self.__dict__["_layers"] = list(zip(self.weights, self.biases, strict=True))
        last = len(layers) - 1
        for i, (w, b) in enumerate(layers):
            x = torch.baddbmm(b, x, w)
            if i < last:
                x = self.act(x)
        return x


class StackedActorCritic(nn.Module):
    """K Gaussian policies with their value functions (see the module docstring)."""

    def __init__(
        self,
        k: int,
        obs_dim: int,
        act_dim: int,
        net_arch: tuple[int, ...],
        activation: str,
        ortho_init: bool,
        log_std_init: torch.Tensor,
    ) -> None:
        super().__init__()
        hidden = list(net_arch)
        self.actor = StackedMLP(k, [obs_dim, *hidden, act_dim], activation, ortho_init, 0.01)
        self.critic = StackedMLP(k, [obs_dim, *hidden, 1], activation, ortho_init, 1.0)
        self.log_std = nn.Parameter(log_std_init.reshape(k, 1).expand(k, act_dim).clone())

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """(K, B, obs) -> (K, B)."""
        return self.critic(obs).squeeze(-1)

    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Actions drawn from each policy, their log-probabilities and the values: (K, B, act),
        (K, B), (K, B)."""
        mean = self.actor(obs)
        std = self.log_std.exp().unsqueeze(1)
        actions = mean + std * self.noise(mean)
        return actions, self._log_prob(actions, mean), self.value(obs)

    def noise(self, mean: torch.Tensor) -> torch.Tensor:
        """Standard normal exploration noise shaped as `mean`, from torch's generator of the
        device it is on (seeded by torch.manual_seed with the CPU's)."""
        return torch.randn_like(mean)

    def evaluate(
        self, obs: torch.Tensor, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Values, log-probabilities of `actions` and entropies, each (K, B)."""
        mean = self.actor(obs)
        entropy = (0.5 + 0.5 * math.log(2 * math.pi) + self.log_std).sum(-1)
        return (
            self.value(obs),
            self._log_prob(actions, mean),
            entropy.unsqueeze(1).expand(mean.shape[:2]),
        )

    def _log_prob(self, actions: torch.Tensor, mean: torch.Tensor) -> torch.Tensor:
        log_std = self.log_std.unsqueeze(1)
        z = (actions - mean) / log_std.exp()
        return (-0.5 * z * z - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
