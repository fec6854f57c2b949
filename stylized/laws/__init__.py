"""Step laws: the protocol (:mod:`.base`; its nominal type, with no imports, :mod:`.law_type`), its array
primitives (:mod:`.step_ops`), the built-in laws
(:mod:`.so2`, :mod:`.isotropic`, :mod:`.cayley`, :mod:`.contraction`, :mod:`.markov_tokens`) and the
registry behind ``make_family`` (:mod:`.registry`)."""
