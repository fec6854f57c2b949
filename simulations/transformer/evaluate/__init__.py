"""Measuring trained checkpoints: length extrapolation, long evaluation, far-context use, passkey, probes."""
