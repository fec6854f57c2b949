"""Training: the loop, multi-GPU training, checkpoints and their files, the (variant, seed) jobs."""
