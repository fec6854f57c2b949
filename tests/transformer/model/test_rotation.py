"""The fast accumulated rotation against the naive reference: outputs, gradients, gradcheck."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from simulations.transformer.model import learned_rotation as lrot  # noqa: E402
from simulations.transformer.model import rotation  # noqa: E402
from simulations.transformer.model.config import GPTConfig  # noqa: E402
from simulations.transformer.model.gpt import GPT, accumulate, head_cos_sin, rope_frequencies, rotate  # noqa: E402

torch.set_num_threads(1)

#: psi shapes relative to x [B, H, L, d]: per batch and head (learned/random), broadcast (RoPE, shared)
PSI_SHAPES = [(3, 2, 5), (1, 1, 5), (3, 1, 5)]


@pytest.fixture(params=[True, False], ids=["kernels", "torch-ops"])
def kernels(request, monkeypatch):
    monkeypatch.setattr(rotation, "USE_KERNELS", request.param)
    return request.param


def _inputs(psi_bhl, d=8, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 2, 5, d, generator=g, dtype=torch.float64).to(dtype)
    psi = (torch.rand(*psi_bhl, d // 2, generator=g, dtype=torch.float64) - 0.5) * 40.0
    return x, psi


def _naive(psi, x, inverse=False):
    cos, sin = head_cos_sin(psi, torch.float32 if x.dtype != torch.float64 else torch.float64)
    return rotate(x, cos, -sin if inverse else sin)


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("psi_bhl", PSI_SHAPES)
def test_forward_bit_identical_and_gradients_match(psi_bhl, inverse, kernels):
    x, psi = _inputs(psi_bhl)
    xr, pr = x.clone().requires_grad_(), psi.clone().requires_grad_()
    xf, pf = x.clone().requires_grad_(), psi.clone().requires_grad_()
    ref = _naive(pr, xr, inverse)
    got = rotation.rotate_fast(pf, xf, inverse=inverse)
    assert torch.equal(got, ref)
    w = torch.randn_like(ref)
    (ref * w).sum().backward()
    (got * w).sum().backward()
    torch.testing.assert_close(xf.grad, xr.grad, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(pf.grad, pr.grad, rtol=1e-5, atol=1e-5)
    assert pf.grad.dtype == torch.float64 and pf.grad.shape == psi.shape


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("psi_bhl", PSI_SHAPES)
def test_gradcheck_float64(psi_bhl, inverse):
    x, psi = _inputs(psi_bhl, d=4, dtype=torch.float64)
    x.requires_grad_()
    psi.requires_grad_()
    assert torch.autograd.gradcheck(lambda p, v: rotation.rotate_fast(p, v, inverse=inverse), (psi, x))
    # plain autograd through the float64 formula agrees with the closed form
    h = x.shape[-1] // 2
    c, s = torch.cos(psi), torch.sin(psi) * (-1.0 if inverse else 1.0)
    ref_y = torch.cat((x[..., :h] * c - x[..., h:] * s, x[..., :h] * s + x[..., h:] * c), dim=-1)
    got = torch.autograd.grad(rotation.rotate_fast(psi, x, inverse=inverse).sum(), (psi, x))
    ref = torch.autograd.grad(ref_y.sum(), (psi, x))
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_gradcheck_slots_pass_through():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 3, 2, 4, generator=g, dtype=torch.float64, requires_grad=True)
    psi = torch.randn(2, 3, 1, 2, 2, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda p, v: rotation.rotate_fast(p, v, n_rot=2), (psi, x))
    y = rotation.rotate_fast(psi, x, n_rot=2)
    assert torch.equal(y[:, :, 2], x[:, :, 2])


def test_kernel_gradients_against_float64(kernels):
    """float32 (fused kernels or torch ops) vs the float64 closed form, slots and broadcast ψ."""
    g = torch.Generator().manual_seed(2)
    x64 = torch.randn(2, 6, 3, 2, 8, generator=g, dtype=torch.float64)
    psi = torch.randn(2, 6, 1, 2, 4, generator=g, dtype=torch.float64) * 5
    w = torch.randn(2, 6, 3, 2, 8, generator=g, dtype=torch.float64)
    out = []
    for dt in (torch.float32, torch.float64):
        xx, pp = x64.to(dt).requires_grad_(), psi.clone().requires_grad_()
        for inverse in (False, True):
            y = rotation.rotate_fast(pp, xx, inverse=inverse, n_rot=2)
            (y.double() * w).sum().backward()
        out.append((xx.grad.double(), pp.grad))
    torch.testing.assert_close(out[0][0], out[1][0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out[0][1], out[1][1], rtol=1e-4, atol=1e-4)


def test_bf16_input_matches_reference():
    """bf16 activations (CUDA autocast): rotated in float32, cast back; gradients as the reference's."""
    x, psi = _inputs((3, 2, 5))
    grads = []
    for f in (rotation.rotate_fast, _naive):
        xb, p = x.to(torch.bfloat16).requires_grad_(), psi.clone().requires_grad_()
        y = f(p, xb)
        assert y.dtype == torch.bfloat16
        (y.float() * torch.linspace(-1, 1, y.numel()).view_as(y)).sum().backward()
        grads.append((y.detach(), xb.grad, p.grad))
    assert torch.equal(grads[0][0], grads[1][0])
    torch.testing.assert_close(grads[0][1], grads[1][1], rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(grads[0][2], grads[1][2], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["qk", "same", "independent"])
def test_rotate_qkv_and_unrotate_output(mode, kernels):
    g = torch.Generator().manual_seed(3)
    B, L, H, d = 2, 7, 3, 6
    qkv = torch.randn(B, L, 3 * H * d, generator=g)
    psi = torch.randn(B, H, L, d // 2, generator=g, dtype=torch.float64)
    psi_v = {"qk": None, "same": psi, "independent": torch.randn(B, H, L, d // 2, generator=g,
                                                                 dtype=torch.float64)}[mode]
    q, k, v, vstate = rotation.rotate_qkv(qkv, H, psi, psi_v)
    rq, rk, rv = (t.view(B, L, H, d).transpose(1, 2) for t in qkv.split(H * d, dim=2))
    assert torch.equal(q, _naive(psi, rq)) and torch.equal(k, _naive(psi, rk))
    assert torch.equal(v, rv if psi_v is None else _naive(psi_v, rv))
    assert (vstate is None) == (psi_v is None)
    if vstate is not None:
        y = torch.randn(B, H, L, d, generator=g)
        ref = _naive(psi_v, y, inverse=True).transpose(1, 2).reshape(B, L, H * d)
        assert torch.equal(rotation.unrotate_output(y, vstate), ref)


@pytest.mark.parametrize("angle_heads", ["per-head", "shared"])
@pytest.mark.parametrize("variant", ["rope", "random-qkv", "learned-qk", "learned-qkv"])
def test_model_fast_path_equals_reference(variant, angle_heads, kernels, monkeypatch):
    cfg = GPTConfig(variant=variant, n_layer=2, n_embd=32, n_head=2, block_size=16, vocab_size=64,
                    angle_heads=angle_heads)
    torch.manual_seed(0)
    model = GPT(cfg)
    with torch.no_grad():
        for block in model.blocks:
            if hasattr(block.attn, "angle_table"):
                block.attn.angle_table.normal_(0.0, 0.5)
    idx = torch.randint(0, 64, (3, 17), generator=torch.Generator().manual_seed(1))
    res = []
    for fast in (True, False):
        monkeypatch.setattr(rotation, "USE_FAST", fast)
        model.zero_grad()
        _, loss = model(idx[:, :-1], idx[:, 1:], generator=torch.Generator().manual_seed(2))
        loss.backward()
        res.append((loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}))
    assert torch.equal(res[0][0], res[1][0])  # forward bit-identical
    for name, grad in res[0][1].items():
        torch.testing.assert_close(grad, res[1][1][name], rtol=1e-5, atol=1e-6, msg=name)


def test_accumulate_fast():
    g = torch.Generator().manual_seed(4)
    theta = torch.randn(2, 9, 3, generator=g, dtype=torch.float64)
    assert torch.equal(rotation.accumulate_fast(theta), accumulate(theta))
    theta.requires_grad_()
    assert torch.autograd.gradcheck(lambda t: rotation.accumulate_fast(t), (theta,))


# ---------------------------------------------------------------------------
# learned angles: ψ from the tables, and ψ's gradient routed to E (learned_rotation.py)
# ---------------------------------------------------------------------------


def _learned_inputs(n_tables=2, h=4, V=11, B=3, L=9, dtype=torch.float32, seed=5, scale=0.7):
    g = torch.Generator().manual_seed(seed)
    E = (torch.randn(V, n_tables * h, generator=g, dtype=torch.float64) * scale).to(dtype)
    idx = torch.randint(0, V, (B, L + 1), generator=g)[:, 1:]  # a strided view, as the model's
    return E, idx, rope_frequencies(2 * h)


@pytest.mark.parametrize("n_tables", [1, 3])
def test_learned_angles_bit_identical_to_reference(n_tables):
    E, idx, omega = _learned_inputs(n_tables=n_tables, L=40, scale=3.0)
    ref = lrot.learned_angles_reference(E, idx, omega, n_tables)
    got = lrot.learned_angles(E, idx, omega, n_tables)
    assert got.shape == ref.shape == (3, n_tables, 40, 4) and got.dtype == torch.float64
    assert torch.equal(got, ref)
    assert torch.equal(torch.cos(got).float(), torch.cos(ref).float())
    assert torch.equal(torch.sin(got).float(), torch.sin(ref).float())
    assert lrot.learned_source(got) is not None


def test_learned_angles_gradients(monkeypatch):
    """Closed-form backward of ψ: gradcheck in float64, and the naive autograd path to round-off."""
    E, idx, omega = _learned_inputs(dtype=torch.float64)
    E.requires_grad_()
    assert torch.autograd.gradcheck(lambda e: lrot.learned_angles(e, idx, omega, 2), (E,))
    w = torch.randn(3, 2, 9, 4, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    E32 = E.detach().float().requires_grad_()
    got = torch.autograd.grad((lrot.learned_angles(E32, idx, omega, 2) * w).sum(), E32)[0]
    ref = torch.autograd.grad((lrot.learned_angles_reference(E32, idx, omega, 2) * w).sum(), E32)[0]
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, ref, rtol=1e-6, atol=1e-6)
    monkeypatch.setattr(rotation, "USE_KERNELS", False)  # no kernels: the reference, no route
    psi = lrot.learned_angles(E32, idx, omega, 2)
    assert lrot.learned_source(psi) is None and "LearnedAngles" not in psi.grad_fn.name()


def test_learned_angles_index_out_of_range():
    E, idx, omega = _learned_inputs()
    with pytest.raises(IndexError):
        lrot.learned_angles(E, idx + E.shape[0], omega, 2)


def _routed(E, idx, omega, n_tables, x, n_rot, inverse, route=True):
    """R(±ψ)x, x [B, L, S, H, d], via the routed Function (or rotate_fast through ψ)."""
    psi = lrot.learned_angles(E, idx, omega, n_tables)
    cos, sin = (rotation.blh_view(t).unsqueeze(2) for t in rotation.cos_sin(psi, x.dtype))
    if route:
        src = lrot.learned_source(psi)
        assert src.applies(psi, x, cos)
        return src.rotate(x, cos, sin, n_rot=n_rot, inverse=inverse)
    return rotation.rotate_fast(rotation.blh_view(psi).unsqueeze(2), x, inverse, (cos, sin), n_rot)


@pytest.mark.parametrize("n_tables", [1, 2])
@pytest.mark.parametrize("n_rot,inverse", [(3, False), (2, False), (1, True)])
def test_routed_rotation_gradcheck_float64(n_tables, n_rot, inverse):
    E, idx, omega = _learned_inputs(n_tables=n_tables, h=2, V=5, B=2, L=4, dtype=torch.float64)
    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, 4, 3, 2, 4, generator=g, dtype=torch.float64, requires_grad=True)
    E.requires_grad_()
    assert torch.autograd.gradcheck(lambda e, v: _routed(e, idx, omega, n_tables, v, n_rot, inverse), (E, x))
    # the routed gradient equals the one through ψ (autograd through LearnedAngles)
    w = torch.randn(2, 4, 3, 2, 4, generator=g, dtype=torch.float64)
    got = torch.autograd.grad((_routed(E, idx, omega, n_tables, x, n_rot, inverse) * w).sum(), (E, x))
    ref = torch.autograd.grad((_routed(E, idx, omega, n_tables, x, n_rot, inverse, False) * w).sum(), (E, x))
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n_tables", [1, 2])
@pytest.mark.parametrize("same", [True, False])
def test_rotate_qkv_learned_route_matches_naive(n_tables, same):
    """float32, model layout: outputs bit-identical to the reference, gradients to round-off."""
    H, d = 2, 8
    E, idx, omega = _learned_inputs(n_tables=n_tables, h=d // 2, L=7)
    g = torch.Generator().manual_seed(8)
    qkv = torch.randn(3, 7, 3 * H * d, generator=g)
    y = torch.randn(3, H, 7, d, generator=g)
    w = torch.randn(4, 3, 7, H * d, generator=g)
    grads, outs = [], []
    for fast in (True, False):
        e, x, yy = E.clone().requires_grad_(), qkv.clone().requires_grad_(), y.clone().requires_grad_()
        if fast:
            psi = lrot.learned_angles(e, idx, omega, n_tables)
            q, k, v, vstate = rotation.rotate_qkv(x, H, psi, psi if same else None)
            assert vstate is None or vstate[2] is not None  # the learned route was taken
            o = rotation.unrotate_output(yy, vstate) if same else yy.transpose(1, 2).reshape(3, 7, H * d)
        else:
            psi = lrot.learned_angles_reference(e, idx, omega, n_tables)
            rq, rk, rv = (t.view(3, 7, H, d).transpose(1, 2) for t in x.split(H * d, dim=2))
            q, k = _naive(psi, rq), _naive(psi, rk)
            v = _naive(psi, rv) if same else rv
            o = (_naive(psi, yy, inverse=True) if same else yy).transpose(1, 2).reshape(3, 7, H * d)
        out = [t.transpose(1, 2).reshape(3, 7, H * d) for t in (q, k, v)] + [o]
        outs.append(out)
        grads.append(torch.autograd.grad(sum((t * wi).sum() for t, wi in zip(out, w)), (e, x, yy)))
    for a, b in zip(*outs):
        assert torch.equal(a, b)
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_route_voided_by_inplace_change_or_retain_grad():
    H, d = 2, 8
    E, idx, omega = _learned_inputs(n_tables=2, h=d // 2, L=5)
    qkv = torch.randn(3, 5, 3 * H * d, generator=torch.Generator().manual_seed(9))
    E.requires_grad_()
    psi = lrot.learned_angles(E, idx, omega, 2)
    psi.retain_grad()
    rotation.rotate_qkv(qkv, H, psi, psi)[0].sum().backward()
    assert psi.grad is not None and E.grad is not None  # through ψ, not routed
    with torch.no_grad():
        psi2 = lrot.learned_angles(E, idx, omega, 2)
        psi2 += 1.0
        q = rotation.rotate_qkv(qkv, H, psi2, psi2)[0]
        ref = rotation.rotate_qkv(qkv, H, psi2.clone(), None)[0]
    assert torch.equal(q, ref)  # the in-place change is seen: not the stale route


def test_learned_path_independent_of_threads():
    """ψ, the routed rotation and their gradients are bit-identical with 1 and 2 threads."""
    H, d = 4, 16
    E, idx, omega = _learned_inputs(n_tables=H, h=d // 2, V=64, B=4, L=48)
    g = torch.Generator().manual_seed(10)
    qkv, y = torch.randn(4, 48, 3 * H * d, generator=g), torch.randn(4, H, 48, d, generator=g)
    w = torch.randn(4, 48, H * d, generator=g)
    res = []
    n0 = torch.get_num_threads()
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            e, x, yy = E.clone().requires_grad_(), qkv.clone().requires_grad_(), y.clone().requires_grad_()
            psi = lrot.learned_angles(e, idx, omega, H)
            q, k, v, vstate = rotation.rotate_qkv(x, H, psi, psi)
            o = rotation.unrotate_output(yy, vstate)
            loss = (o * w).sum() + sum((t * t).sum() for t in (q, k, v)) + (psi * psi).sum()
            res.append([psi.detach(), o.detach(), *torch.autograd.grad(loss, (e, x, yy))])
    finally:
        torch.set_num_threads(n0)
    for a, b in zip(*res):
        assert torch.equal(a, b)
