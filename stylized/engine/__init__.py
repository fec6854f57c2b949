"""The simulation engine: route transport ``P_{j→i}`` (:mod:`.transport`, with the dense oracle in
:mod:`.transport_reference`), the Numba kernels (:mod:`.kernels`, :mod:`.lse`), sampling of overlaps and
score chains (:mod:`.sampling`, :mod:`.score_chains`), the score and context sweeps (:mod:`.scores`,
:mod:`.context_sweep`), values with and without transport (:mod:`.values`), the far mass ``ρ_D``
(:mod:`.farmass`) and the attention layer (:mod:`.attention`).  It asks a step law its own methods and imports
from :mod:`stylized.laws` only the nominal type (:mod:`~stylized.laws.law_type`), the array primitives
(:mod:`~stylized.core.step_ops`) and the far-mass controls (:mod:`~stylized.laws.controls`)."""
