"""Tiny-Critic: the interface every critic meets, and the transformer critic that ships with it."""

from ragbrain.critic.base import Critic, keep_mask
from ragbrain.critic.model import CALIBRATION_FILE, TransformerCritic, default_critic_path

__all__ = ["CALIBRATION_FILE", "Critic", "TransformerCritic", "default_critic_path", "keep_mask"]
