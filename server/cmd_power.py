"""`kerncast power train|evaluate`: train the shipped power models, and score them honestly on the datasets."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kerncast.analysis.power.dataset import DatasetError, default_data_dir, load_all
from kerncast.analysis.power.public import evaluate as evaluate_public
from kerncast.analysis.power.public import format_text as format_public
from kerncast.analysis.power.scores import evaluate_all, format_text
from kerncast.analysis.power.train import models_dir, train_all
from kerncast.analysis.power.validation import evaluate_launches, read_launches
from kerncast.analysis.power.validation import format_text as format_measured


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="power_command", metavar="{train,evaluate}")
    data_help = f"directory of the power datasets (*.csv); default {default_data_dir()}"
    tr = sub.add_parser("train", help="train the thesis and default models and write them to --out")
    tr.add_argument("--data", type=Path, default=None, help=data_help)
    tr.add_argument("--out", type=Path, default=None, help="output directory (default: the package's shipped/)")
    tr.add_argument("--jobs", type=int, default=1, help="threads per model fit (default 1)")
    ev = sub.add_parser("evaluate", help="shuffled and grouped (unseen-benchmark) CV scores per dataset")
    ev.add_argument("--data", type=Path, default=None, help=data_help)
    ev.add_argument("--format", choices=("json", "text"), default="text")
    ev.add_argument("--datasets", default=None, help="comma-separated file stems (default: all found)")
    ev.add_argument("--repeats", type=int, default=5, help="grouped CV repetitions of the default model (5)")
    ev.add_argument("--thesis-repeats", type=int, default=3,
                    help="grouped CV repetitions of the thesis model (3; shuffled CV uses 2)")
    ev.add_argument("--jobs", type=int, default=1, help="threads per model fit (default 1)")
    ev.add_argument("--measured", type=Path, default=None, metavar="CSV",
                    help="instead of the datasets: score both power models on measured launches of real kernels "
                         "(columns source_file, kernel, grid, block, power_w; optional dynamic_shared_bytes, "
                         "params, benchmark), e.g. validation/h100/measurements.csv")
    ev.add_argument("--samples", type=Path, default=None, metavar="DIR",
                    help="instead of the datasets: score both power models on the datasets' kernels whose sources "
                         "are NVIDIA's public CUDA samples (DIR: a checkout of NVIDIA/cuda-samples), at the "
                         "datasets' launches, against the statistical model out of fold")
    ev.add_argument("--rodinia", type=Path, default=None, metavar="DIR",
                    help="with --samples: also Rodinia's kernels the datasets name (DIR: a checkout of Rodinia's "
                         "GPU suite, CUDA sources under cuda/)")
    ev.add_argument("--gpu", default=None, help="with --measured: the GPU profile the launches were measured on")
    ev.add_argument("--root", type=Path, default=None,
                    help="with --measured: folder that relative source paths start from (default: the CSV's)")


def _load(args):
    data = load_all(args.data)
    if getattr(args, "datasets", None):
        wanted = [s.strip() for s in args.datasets.split(",") if s.strip()]
        unknown = [w for w in wanted if w not in data]
        if unknown:
            raise ValueError(f"dataset(s) not found: {', '.join(unknown)} (found: {', '.join(sorted(data))})")
        return data, wanted
    return data, sorted(data)


def _evaluate_measured(args: argparse.Namespace) -> int:
    """Both power models against measured launches (`--measured`)."""
    if not args.gpu:
        raise ValueError("--measured needs --gpu (the profile the launches were measured on)")
    if not args.measured.is_file():
        raise ValueError(f"--measured: no such file {args.measured}")
    result = evaluate_launches(read_launches(args.measured, args.root), args.gpu)
    print(json.dumps(result, indent=1) if args.format == "json" else format_measured(result))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.power_command not in ("train", "evaluate"):
        print("kerncast power: choose a command: train or evaluate", file=sys.stderr)
        return 2
    try:
        if args.power_command == "train":
            data, _ = _load(args)
            out = args.out or models_dir()
            train_all(data, out, n_jobs=args.jobs, log=lambda m: print(m, file=sys.stderr))
            print(f"models written to {out}")
            return 0
        if args.measured is not None:
            return _evaluate_measured(args)
        if args.samples is not None:
            result = evaluate_public(args.samples, data_dir=args.data, rodinia=args.rodinia)
            print(json.dumps(result, indent=1) if args.format == "json" else format_public(result))
            return 0
        data, names = _load(args)
        result = evaluate_all(data, names, repeats=args.repeats, thesis_repeats=args.thesis_repeats, n_jobs=args.jobs)
        print(json.dumps(result, indent=1) if args.format == "json" else format_text(result))
        return 0
    except (DatasetError, ValueError, KeyError, OSError) as exc:
        print(f"kerncast power: {exc}", file=sys.stderr)
        return 1
