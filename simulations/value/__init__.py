"""C5, value-side incoherence: one check module per experiment, sharing :mod:`simulations.value._common`.

:mod:`.incoherence` (``value-incoherence``, ``value-scaling``), :mod:`.snr` (``value-snr``),
:mod:`.noncommutative` (``value-noncommutative``) and :mod:`.independent_stream`
(``value-independent-stream``) register their checks on import (:func:`simulations.check_modules`).
"""
