"""Benchmarks: what ``stylized bench`` runs, kept outside the library (``stylized`` never imports this package).

* :mod:`benchmarks.runner` — the table / JSON of ``stylized bench`` (``python -m benchmarks``);
* :mod:`benchmarks.timing` — how a row is timed (ours and the baseline alternating, medians, peak memory);
* :mod:`benchmarks.kernels`, :mod:`benchmarks.scores` — Numba kernels against their NumPy twins;
* :mod:`benchmarks.transformer` — transformer step and long-context eval cost (needs torch):
  ``python -m benchmarks.transformer --preset cpu``.
"""
