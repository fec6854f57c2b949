"""The bridge from the stylized model to trained transformers: far-mass forecasts, perplexity, skill."""
