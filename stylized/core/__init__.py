"""The floor every other layer stands on: errors, the option layer, argument checks that broadcast like
ufuncs (:mod:`._broadcast`) and the wording they share (:mod:`.wording`), array backends, counter-based random streams, estimators with intervals and
the Monte Carlo plumbing.  Imports nothing from the rest of the package."""
