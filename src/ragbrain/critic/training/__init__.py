"""Training, calibrating and evaluating critics; the runtime (``ragbrain.critic``) never
imports this package."""
