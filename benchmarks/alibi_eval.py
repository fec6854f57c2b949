"""ALiBi evaluation rows of ``stylized bench`` (need torch): the efficient SDPA path against RoPE and the old 3-D mask.

The cpu preset's model (``L_train = 64``) evaluated without gradients on one sequence of 64 × ``L_train`` = 4,096
tokens, one torch thread: ALiBi with its 4-D mask (:func:`simulations.transformer.model.attention_bias.biased_attention`)
against RoPE (goal: ≤ 1.3× RoPE's time per token, issue 38) and against the same ALiBi model given the 3-D
``[H, n, b]`` mask it had before (SDPA's math kernel).  Peak memory: growth of the process's resident peak (VmHWM,
reset before the pass) during one forward pass of ours, in MiB.
"""

from __future__ import annotations

from pathlib import Path

from .timing import row as _row

__all__ = ["bench_rows", "MULTIPLE"]

MULTIPLE = 64
"""The evaluation length in multiples of the cpu preset's training length."""


def _peak_growth_mib(fn) -> float | None:
    def kb(field: str) -> int:
        return next(int(ln.split()[1]) for ln in Path("/proc/self/status").read_text().splitlines()
                    if ln.startswith(field + ":"))

    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
        before = kb("VmRSS")
        fn()
        return round((kb("VmHWM") - before) / 1024, 1)
    except (OSError, StopIteration, ValueError):
        return None


def bench_rows(repeat: int) -> list[dict]:
    import torch
    import torch.nn.functional as F

    from simulations.transformer.model import attention_bias
    from simulations.transformer.model.gpt import GPT
    from simulations.transformer.model.presets import Preset

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        models = {}
        for variant in ("rope", "alibi"):
            mcfg = Preset.from_name("cpu", variant=variant).model
            torch.manual_seed(0)
            models[variant] = GPT(mcfg).eval()
        L = mcfg.block_size * MULTIPLE
        x = torch.randint(0, mcfg.vocab_size, (1, L), generator=torch.Generator().manual_seed(0))

        def forward(variant: str):
            with torch.no_grad():
                return models[variant](x)[0]

        sdpa = F.scaled_dot_product_attention

        def three_d(*a, attn_mask=None, **k):  # the mask as it was passed before: [H, n, b]
            if attn_mask is not None and attn_mask.dim() == 4 and attn_mask.shape[0] == 1:
                attn_mask = attn_mask[0]
            return sdpa(*a, attn_mask=attn_mask, **k)

        def old_path():
            attention_bias.F.scaled_dot_product_attention = three_d
            try:
                return forward("alibi")
            finally:
                attention_bias.F.scaled_dot_product_attention = sdpa

        name = f"ALiBi eval, 4-D mask (efficient SDPA), {L:,} tokens = {MULTIPLE}× L_train, cpu preset, 1 thread"
        rows = [_row(name + " — vs RoPE (goal: ours/RoPE ≤ 1.3)", "end-to-end", "RoPE, same model size and length",
                     lambda: forward("alibi"), lambda: forward("rope"), repeat, goal="≤ 1.3× RoPE per token",
                     met=lambda s, b: s / b <= 1.3),
                _row(name + " — vs the 3-D mask", "end-to-end", "ALiBi with the 3-D [H, n, b] mask (math kernel)",
                     lambda: forward("alibi"), old_path, repeat)]
        peak, peak_old = _peak_growth_mib(lambda: forward("alibi")), _peak_growth_mib(old_path)
        for r in rows:
            r["peak_mib"] = peak
        rows[1]["baseline_peak_mib"] = peak_old
        return rows
    finally:
        torch.set_num_threads(threads)
