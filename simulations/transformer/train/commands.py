"""``stylized transformer train``: train one variant, checkpointed (the loop: :mod:`.loop`)."""

from __future__ import annotations

import argparse

from stylized.core.errors import InvalidInput
from stylized.core.options import Choice, Int, arg_type

from ..model.config import VARIANTS
from ..options import PRESET_NAMES, TOKENIZER, add_run_options, check_choice
from ..paths import checkpoint_path, destination
from .checkpoints import check_dir

__all__ = ["add_commands", "cmd_train"]


def cmd_train(args: argparse.Namespace) -> int:
    from ..model.presets import Preset
    from .loop import train

    check_choice("variant", args.variant, VARIANTS)
    check_choice("preset", args.preset, PRESET_NAMES)
    if args.resume and args.force:
        raise InvalidInput("--resume with --force: --resume continues the checkpoint, --force retrains over it; pass one")
    # other steps, data or tokenizer: the checkpoint goes under exploratory/train/, never where the commands that
    # write committed results resume it
    dest = destination("train", args, subsets=())
    results_dir = args.results_dir or (None if dest.canonical else str(dest.root))
    path = checkpoint_path(args.preset, args.variant, args.seed, results_dir)
    check_dir(path.parent, "--results-dir")  # before any work (train checks again, for its other callers)
    if path.exists() and not (args.resume or args.force):
        raise ValueError(f"checkpoint {path} exists: pass --resume to continue it or --force to retrain over it")
    if path.exists() and args.force and not args.resume:
        try:
            path.unlink()
        except OSError as e:
            raise InvalidInput(f"--force: cannot remove {path} ({e.strerror or type(e).__name__})") from None
    config = Preset.from_name(args.preset, variant=args.variant, steps=args.steps, seed=args.seed, data=args.data,
                              tokenizer=args.tokenizer, bpe_vocab=args.bpe_vocab)
    info = train(config, resume=args.resume, results_dir=results_dir)
    h = info["history"]
    print(f"trained {args.variant} ({args.preset}) to step {info['step']}; "
          f"last loss {h[-1][1]:.4f}; checkpoint {info['checkpoint']}" if h else
          f"nothing to do: checkpoint {info['checkpoint']} already at step {info['step']}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``train`` to the ``stylized transformer`` sub-parsers."""
    t = sub.add_parser("train", help="train one variant (checkpointed)")
    t.add_argument("--variant", required=True, type=arg_type(Choice(*VARIANTS)), help=f"one of {', '.join(VARIANTS)}")
    add_run_options(t)
    t.add_argument("--resume", action="store_true", help="continue from the checkpoint")
    t.add_argument("--force", action="store_true", help="retrain over an existing checkpoint")
    t.add_argument("--steps", type=arg_type(Int(1, 10**7)), default=None)
    t.add_argument("--data", default=None,
                   help="builtin (default), owt[:FOLDER] (local OpenWebText, else $STYLIZED_OWT_DIR), or a text file/folder")
    t.add_argument("--tokenizer", default=None, type=TOKENIZER,
                   help="bytes (default) or a locally trained byte-level BPE")
    t.add_argument("--bpe-vocab", type=arg_type(Int(257, 10**6)), default=None, help="BPE vocabulary (default 4096; paper preset 32768)")
    t.set_defaults(func=cmd_train)
