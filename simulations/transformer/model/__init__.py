"""The small GPT and what its position mechanisms are made of: config, presets, attention biases, PaTH, rotations."""
