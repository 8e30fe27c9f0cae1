"""Tiny-Critic: the interface every critic meets, and the transformer critic that ships with it."""

from ragbrain.critic.base import Critic, keep_mask
from ragbrain.critic.folder import CALIBRATION_FILE, default_critic_path
from ragbrain.critic.model import TransformerCritic

__all__ = ["CALIBRATION_FILE", "Critic", "TransformerCritic", "default_critic_path", "keep_mask"]
