"""C6 against route length: each variant's perplexity ratio against the share of its planes that have mixed.

Mixing windows are absolute (C1): a plane ``b`` decorrelates a far key from the query once the route is longer
than its window ``W_b(ε)``.  The comparison's lengths are therefore placed, per variant, on the axis "share of its
rotation planes with ``W_b(ε) ≤ L``" (every layer and head; ``ε`` = :data:`EPS`), the route length over each
plane's measured window:

* ``random-qk``, ``random-qkv``: ``θ_b ~ U(−ω_b, ω_b)`` i.i.d. per token, ``W_b = ⌈ln ε / ln sinc ω_b⌉``
  (closed form, :class:`stylized.laws.families.RopeRandom`), the same in every layer and head;
* ``learned-qk``, ``learned-qkv``: ``θ_b(x) = π tanh(E[x]) − ω_b`` is a function of the token, so the window is
  *measured* on held-out text: the first ``n`` of a geometric grid (:data:`GRID_POINTS` points up to the longest
  evaluated length) where ``|m_b(n)| < ε``, ``m_b(n) = mean_j e^{i(Φ_{j+n,b} − Φ_{j,b})}`` over :data:`STARTS`
  random starts ``j`` (``Φ`` the cumulative angle along the stream; noise floor of ``|m_b|`` about
  ``1/√STARTS``), per checkpoint, layer, head and plane;
* ``rope``: ``P_n = R(nω)`` never decorrelates (share 0 at every length); ``nope``, ``alibi`` and ``path`` have no
  rotation planes and are not on this axis.

Nothing is fitted: the ratios are the committed comparison's (author's metric, geometric mean over seeds), and the
windows come from the law or from the checkpoints of those runs (missing checkpoints are retrained by
``stylized transformer route-length``; the same seeds, the same code).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

__all__ = ["EPS", "STARTS", "GRID_POINTS", "random_windows", "measured_windows", "checkpoint_windows",
           "missing_checkpoints", "route_length_result", "run_dir", "result_path", "run_route_length", "plot_route_length",
           "route_length_section", "cmd_route_length"]

EPS = 0.05  # the probe's ε (probe.WINDOW_EPS): a plane has mixed when its mean correlation is below 5%
STARTS = 10_000
GRID_POINTS = 240
VARIANTS = ("random-qk", "random-qkv", "learned-qk", "learned-qkv")


def random_windows(omega: np.ndarray, eps: float = EPS) -> np.ndarray:
    """``W_b(ε) = ⌈ln ε / ln sinc ω_b⌉`` of ``θ_b ~ U(−ω_b, ω_b)`` (``inf`` where ``sinc ω_b = 1``)."""
    chi = np.abs(np.sinc(np.asarray(omega, dtype=float) / np.pi))
    with np.errstate(divide="ignore"):
        return np.where(chi < 1.0, np.ceil(math.log(eps) / np.log(np.minimum(chi, 1.0))), np.inf)


def measured_windows(theta: np.ndarray, tokens: np.ndarray, n_max: int, eps: float = EPS, seed: int = 0,
                     starts: int = STARTS, grid_points: int = GRID_POINTS) -> np.ndarray:
    """Per plane (columns of ``theta``, ``(V, planes)`` angles per token): the first ``n`` of a geometric grid up to
    ``n_max`` where ``|mean_j e^{i(Φ_{j+n} − Φ_j)}| < ε`` on ``tokens``; ``inf`` where it never falls below."""
    tokens = np.asarray(tokens, dtype=np.int64)
    if tokens.size <= n_max + 1:
        raise ValueError(f"tokens: need more than n_max + 1 = {n_max + 1} tokens, got {tokens.size}")
    grid = np.unique(np.round(np.geomspace(1, n_max, grid_points)).astype(int))
    j = np.random.default_rng(seed).integers(0, tokens.size - n_max - 1, starts)
    out = np.full(theta.shape[1], np.inf)
    for c in range(0, theta.shape[1], 16):  # 16 planes at a time: Φ is (tokens, 16) float64
        phi = np.cumsum(theta[tokens, c:c + 16], axis=0)
        base = phi[j]
        for n in grid:
            m = np.abs(np.exp(1j * (phi[j + n] - base)).mean(axis=0))
            hit = np.isinf(out[c:c + 16]) & (m < eps)
            out[c:c + 16][hit] = n
            if not np.isinf(out[c:c + 16]).any():
                break
    return out


def checkpoint_windows(path: Path, tokens: np.ndarray, n_max: int, eps: float = EPS) -> tuple[np.ndarray, str]:
    """Every layer's and head's plane windows of a learned-angle checkpoint (:func:`measured_windows`), and the
    digest of its weights (:func:`~.evaluate.weights_digest`)."""
    import torch

    from ..evaluate.extrapolation import weights_digest
    from ..train.loop import load_model

    model, _ = load_model(path, "cpu", label="route-length checkpoint")
    out = []
    for blk in model.blocks:
        att = blk.attn
        if not hasattr(att, "angle_table"):
            continue
        with torch.no_grad():
            delta = (math.pi * torch.tanh(att.angle_table.double())).cpu().numpy()
        omega = att.omega.double().cpu().numpy()
        theta = delta - np.tile(omega, delta.shape[1] // len(omega))
        out.append(measured_windows(theta, tokens, n_max, eps))
    return np.concatenate(out), weights_digest(model)


def _share(windows: np.ndarray, L: int) -> float:
    return float(np.mean(windows <= L))


def _median_window(windows: np.ndarray) -> float | None:
    w = float(np.median(windows))
    return None if not math.isfinite(w) else w


def route_length_result(compare: dict, windows: dict[str, dict[int, np.ndarray]], window_kind: dict[str, str],
                        excluded: list[dict] | None = None) -> dict:
    """Rows ``(variant, multiple, tokens, ratio, per-seed ratios, share mixed, per-seed shares)`` from a comparison
    result and each variant's plane windows per seed (``{seed: windows}``): the ratio is the geometric mean over
    those seeds only (the comparison's per-seed ratios, in its seed order), so windows and ratios are the same runs."""
    L_train = int(compare["params"]["model"]["block_size"])
    L_max = L_train * max(int(r["multiple"]) for r in compare["rows"])
    order = compare["params"]["seeds"]
    rows = []
    for r in compare["rows"]:
        v = r["variant"]
        if r["metric"] != "all" or (v not in windows and v != "rope"):
            continue
        L = int(r["multiple"]) * L_train
        use = list(order[v]) if v == "rope" else sorted(windows[v])
        ratios = [float(r["per_seed"][list(order[v]).index(s)]) for s in use]
        shares = [0.0] * len(use) if v == "rope" else [_share(windows[v][s], L) for s in use]
        rows.append({"variant": v, "multiple": int(r["multiple"]), "tokens": L, "seeds": use,
                     "ratio": float(np.exp(np.mean(np.log(ratios)))), "ratio_per_seed": ratios,
                     "share_mixed": float(np.mean(shares)), "share_per_seed": shares})
    summary = {}
    for v, ws in windows.items():
        w = np.concatenate(list(ws.values()))
        summary[v] = {"window_kind": window_kind[v], "seeds": sorted(ws), "planes": int(next(iter(ws.values())).size),
                      "median_window": _median_window(np.where(w > L_max, np.inf, w)),
                      "planes_beyond_longest": float(np.mean(w > L_max))}
    return {"claim": "transformer-route-length", "eps": EPS, "starts": STARTS, "grid_points": GRID_POINTS,
            "L_train": L_train, "preset": compare["params"]["preset"], "metric": "all", "rows": rows,
            "variants": summary, "excluded": excluded or []}


def run_dir(root: Path, preset: str) -> Path:
    """Where a preset's comparison lives: ``root`` for the canonical cpu preset, ``root/runs/<preset>`` otherwise."""
    return Path(root) if preset == "cpu" else Path(root) / "runs" / preset


def result_path(root: Path, preset: str) -> Path:
    """``route_length_<preset>.json`` beside the preset's comparison."""
    return run_dir(root, preset) / f"route_length_{preset}.json"


def missing_checkpoints(root: Path, preset: str = "cpu") -> list[tuple[str, int]]:
    """The learned (variant, seed) runs of the preset's comparison whose checkpoint is not on disk."""
    from ..paths import checkpoint_path

    where = run_dir(root, preset)
    seeds = json.loads((where / f"{preset}_compare.json").read_text())["params"]["seeds"]
    return [(v, int(s)) for v in ("learned-qk", "learned-qkv") for s in seeds.get(v, [])
            if not checkpoint_path(preset, v, int(s), None if preset == "cpu" else where).exists()]


def run_route_length(root: Path, preset: str = "cpu", *, train_missing: bool = True, log=print) -> dict:
    """Windows of every random and learned variant of the committed comparison of ``preset``
    (``<run dir>/<preset>_compare.json``, :func:`run_dir`).  A missing learned checkpoint is retrained (same preset,
    seed and code as the comparison's run), or with ``train_missing=False`` listed as ``missing``; a checkpoint whose
    weights differ from the evaluated run's is listed as ``excluded``."""
    from ..data.corpus import load_corpus
    from ..evaluate.extrapolation import eval_cache_path
    from ..model.gpt import GPT
    from ..model.presets import Preset
    from ..paths import checkpoint_path
    from ..train.loop import train
    from ..train.readers import read_json

    where = run_dir(root, preset)
    compare = json.loads((where / f"{preset}_compare.json").read_text())
    L_max = int(compare["params"]["model"]["block_size"]) * max(int(r["multiple"]) for r in compare["rows"])
    seeds = compare["params"]["seeds"]
    windows, kind = {}, {}
    config = Preset.from_name(preset, variant="random-qk")
    mcfg = config.model
    omega = GPT(mcfg).blocks[0].attn.omega.double().numpy()
    for v in ("random-qk", "random-qkv"):
        if v in seeds:
            heads = mcfg.n_head * mcfg.n_layer
            law = np.tile(random_windows(omega), heads)  # the same law in every layer and head, and for every seed
            windows[v], kind[v] = {int(x): law for x in seeds[v]}, "closed form"
    corpus, excluded, missing = None, [], []
    for v in ("learned-qk", "learned-qkv"):
        if v not in seeds:
            continue
        per = {}
        for s in seeds[v]:
            path = checkpoint_path(preset, v, int(s), None if preset == "cpu" else where)
            if corpus is None:
                tc = config.train
                corpus = load_corpus(tc.data, tc.max_bytes, tc.tokenizer, tc.bpe_vocab)
            if not path.exists():
                if not train_missing:
                    missing.append({"variant": v, "seed": int(s)})
                    log(f"[route-length] {v} seed {s}: no checkpoint on disk (--no-train): left out")
                    continue
                log(f"[route-length] training {v} seed {s}")
                train(Preset.from_name(preset, variant=v, seed=int(s)), resume=True, ckpt=path, corpus=corpus, progress=False, device="cpu")
            w, digest = checkpoint_windows(path, np.asarray(corpus.val), L_max)
            cached = read_json(eval_cache_path(path), "checkpoint", need=("key",),
                               check=lambda d: None if isinstance(d["key"], dict) and isinstance(
                                   d["key"].get("weights"), str) else "no weights digest in its key")["key"]["weights"]
            if digest != cached:  # not the run whose ratios the comparison holds: its windows would not be its own
                excluded.append({"variant": v, "seed": int(s), "weights": digest, "evaluated_weights": cached,
                                 "median_window": float(np.median(w)), "share_mixed_longest": float(np.mean(w <= L_max))})
                log(f"[route-length] {v} seed {s}: weights {digest} differ from the evaluated run's {cached}: excluded")
                continue
            per[int(s)] = w
            log(f"[route-length] {v} seed {s}: median window {np.median(w):,.0f}, "
                f"{np.mean(w <= L_max):.0%} of planes mix by {L_max:,} tokens")
        if per:
            windows[v], kind[v] = per, "measured"
    return {**route_length_result(compare, windows, kind, excluded), "missing": missing}


def plot_route_length(result: dict, path: Path) -> Path:
    """(a) share of planes mixed against absolute length; (b) the ratio against that share."""
    from matplotlib import ticker

    from stylized.harness import plotting as sp

    @sp.themed
    def draw() -> Path:
        fig, (a1, a2) = sp.figure(1, 2, height=3.6)
        for c, v in enumerate(["rope", *VARIANTS]):
            rs = sorted((r for r in result["rows"] if r["variant"] == v), key=lambda r: r["tokens"])
            if not rs:
                continue
            x, s, y = ([r[k] for r in rs] for k in ("tokens", "share_mixed", "ratio"))
            a1.plot(x, s, "o-", color=f"C{c}", ms=3, label=v + (" (random-qk's law)" if v == "random-qkv" else ""))
            a2.plot(s, y, "o-", color=f"C{c}", ms=3, label=v)
            a2.annotate(f"{rs[-1]['multiple']}×", (s[-1], y[-1]), fontsize=7, xytext=(3, 2), textcoords="offset points")
        a1.set_xscale("log", base=2)
        a1.axvline(result["L_train"], color="0.5", ls=":", lw=1)
        a1.set_xlabel("context length L (tokens)")
        a1.set_ylabel(rf"share of planes with $W_b(\varepsilon) \leq L$, ε={result['eps']:g}")
        a1.set_title("planes mixed by length (all layers and heads)")
        a1.legend()
        a2.set_yscale("log")
        a2.yaxis.set_major_locator(ticker.FixedLocator([0.8, 1, 1.25, 1.5, 2, 3, 4, 6, 8, 12, 16]))
        a2.yaxis.set_major_formatter(ticker.FuncFormatter(lambda y, _: f"{y:g}"))
        a2.yaxis.set_minor_formatter(ticker.NullFormatter())
        a2.axhline(1.0, color="k", lw=0.8)
        a2.set_xlabel(r"share of planes mixed at L ($L \geq W_b$)")
        a2.set_ylabel("PPL(L)/PPL(L_train), author's metric")
        a2.set_title("degradation against the share mixed")
        sp.caption(fig, f"{result['preset']} preset, L_train={result['L_train']}; random: closed-form windows; learned: "
                        f"measured on held-out text ({result['starts']:,} starts, {result['grid_points']}-point grid), "
                        "mean over seeds; ratios: geometric mean over the same seeds")
        return sp.save(fig, Path(path).with_suffix(""))

    return draw()


def route_length_section(directory: Path, preset: str = "cpu") -> list[str]:
    """The paper_checks.md section, from ``route_length_<preset>.json`` (:func:`result_path`)."""
    from stylized.harness.report import fmt

    path = result_path(Path(directory) / "transformer", preset)
    if not path.exists():
        return []
    from ..train.readers import read_json

    r = read_json(path, "route-length")
    fig = "figures/transformer_route_length.png" if preset == "cpu" else \
        f"simulations/results/transformer/runs/{preset}/transformer_route_length.png"
    lines = [f"### The comparison against route length over the measured mixing windows ({preset} preset)", "",
             f"Command: `stylized transformer route-length{'' if preset == 'cpu' else ' --preset ' + preset}`. Each "
             "length L placed at the share of a variant's rotation "
             f"planes (every layer and head) whose window W_b(ε = {fmt(r['eps'])}) is ≤ L: random variants from the "
             "closed form ⌈ln ε/ln sinc ω_b⌉, learned variants measured on held-out text from the comparison's own "
             f"checkpoints ({r['starts']:,} starts, a {r['grid_points']}-point geometric grid of n); RoPE never mixes. "
             f"Figure: `{fig}`.", "",
             "| variant | windows | seeds | planes per seed | median W_b | planes with W_b beyond the longest length | share mixed at "
             "L_train / 32× / 128× | ratio at 32× / 128× (geometric mean over these seeds) |",
             "|---|---|---|---|---|---|---|---|"]
    for v, s in r["variants"].items():
        rs = {x["multiple"]: x for x in r["rows"] if x["variant"] == v}
        share = " / ".join(fmt(rs[m]["share_mixed"]) if m in rs else "—" for m in (1, 32, 128))
        ratio = " / ".join(fmt(rs[m]["ratio"]) if m in rs else "—" for m in (32, 128))
        med = "> longest (over half mix later)" if s["median_window"] is None else f"{s['median_window']:,.0f}"
        lines.append(f"| {v} | {s['window_kind']} | {', '.join(map(str, s['seeds']))} | {s['planes']} | {med} | "
                     f"{100 * s['planes_beyond_longest']:.0f}% | {share} | {ratio} |")
    ex = r.get("excluded") or []
    if ex:
        lines += ["", "Excluded: " + "; ".join(
            f"{e['variant']} seed {e['seed']} (retrained weights {e['weights']} ≠ the evaluated run's "
            f"{e['evaluated_weights']}; its windows: median {e['median_window']:,.0f}, "
            f"{100 * e['share_mixed_longest']:.0f}% of planes mixed by the longest length)" for e in ex)
            + ". A learned seed counts only when retraining reproduces the evaluated run bit for bit (same weights "
            "digest), so that the windows belong to the ratios beside them."]
    if r.get("missing"):
        lines += ["", "Not on disk when this was run (left out): " + ", ".join(
            f"{m['variant']} seed {m['seed']}" for m in r["missing"]) + "."]
    return lines + [""]


def cmd_route_length(args) -> int:
    """``stylized transformer route-length``: windows, the result, its figure and its section (:mod:`~simulations.transformer.paths`:
    ``--no-train`` with a checkpoint missing writes under ``exploratory/``)."""
    from stylized.core.errors import InvalidInput
    from stylized.harness.results import atomic_write_text, figures_dir, to_jsonable

    from ..paths import destination, results_root
    from ..train.checkpoints import check_dir
    from ..train.readers import read_json

    preset = args.preset
    where = run_dir(results_root(), preset)
    compare = where / f"{preset}_compare.json"
    if not compare.exists():
        raise InvalidInput(f"--preset: no committed {preset} comparison (run `stylized transformer compare --preset "
                           f"{preset}` first)")
    read_json(compare, "--preset", need=("params", "rows"))  # a damaged comparison: one line naming it
    gone = missing_checkpoints(results_root(), preset) if args.no_train else []
    dest = destination("route-length", args, root=where, figures=figures_dir() if preset == "cpu" else where,
                       incomplete=f"--no-train with {len(gone)} learned checkpoint(s) missing"
                       if gone else None)
    out = result_path(results_root(), preset) if dest.canonical else dest.root / f"route_length_{preset}.json"
    fig = dest.figures / "transformer_route_length.png"
    check_dir(out.parent, "results")
    check_dir(fig.parent, "figures/")
    res = run_route_length(results_root(), preset, train_missing=not args.no_train)
    atomic_write_text(out, json.dumps(to_jsonable(res), indent=1) + "\n")
    fig = plot_route_length(res, fig)
    if dest.canonical:
        print("\n".join(route_length_section(results_root().parent, preset)))
    print(f"wrote {out} and {fig}")
    return 0
