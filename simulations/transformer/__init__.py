"""Decoder-only transformers with accumulated-transformation position mechanisms.

Research code for "Why Do Accumulated Transformations Extrapolate?": small GPT models trained at one
context length and evaluated far beyond it.  One sub-package per concept: :mod:`.model`, :mod:`.data`,
:mod:`.train`, :mod:`.evaluate`, :mod:`.c6`, :mod:`.bridge`, :mod:`.recall`, each registering its own
sub-commands (``commands.py``); :mod:`.paths` says where results go, :mod:`.options` holds the options the
commands share and :mod:`.cli` assembles the ``stylized transformer`` command.  Importing this package (or any
of its sub-packages) imports nothing.
"""
