"""Both power models on the power datasets' kernels whose sources are public, at the datasets' launches.

The datasets (data/power/: K20, M60, V100) name their benchmarks and kernels and give each row's grid and block;
several are NVIDIA's CUDA samples. This script analyses those kernels from the samples' public sources at each
row's launch and scores, per GPU and grouped by benchmark:

* the event model (its point and interval, from the source: nothing of the dataset reaches it);
* the statistical default model *out of fold*: predicted for each row by a model trained with that row's whole
  benchmark held out (grouped CV, `evaluate.grouped_oof`), since the shipped model was trained on these rows;
* the answer the event model would show as the default: its point, its interval widened to the statistical
  model's point.

    .venv/bin/python benchmarks/validate_power_public.py --samples DIR [--format json]

DIR is a checkout of github.com/NVIDIA/cuda-samples (its `Samples/` and `Common/`). The samples of today differ
from those the datasets ran in one constant: the transpose sample's BLOCK_ROWS is 16 now and was 8 then (the
datasets' 256-thread blocks are 32 x 8), so the analysed copy sets it from the row's block. Matrix sizes follow
from the grids (square matrices of 32 x 32 tiles; the sample's default 320 x 320 times 640 x 320 for its
200-block grid). Nothing is fitted to these rows: they only score.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.power.dataset import load_all
from kerncast.analysis.power.evaluate import grouped_oof
from kerncast.analysis.power.recipes import default_recipe
from kerncast.analysis.power.validation import MeasuredLaunch, Scored, metrics, score_launch

DATASETS = {"k20_larger": "k20", "maxwell_m60": "m60", "v100": "v100"}

TRANSPOSE = {"Tpose0": "copy", "Tpose1": "copySharedMem", "Tpose2": "transposeNaive",
             "Tpose3": "transposeCoalesced", "Tpose4": "transposeNoBankConflicts",
             "Tpose5": "transposeCoarseGrained", "Tpose6": "transposeFineGrained", "Tpose7": "transposeDiagonal"}


@dataclass(frozen=True)
class Public:
    """A public benchmark: its sample source, the kernel of each dataset kernel name, and the launch of a row."""

    source: str
    kernel: Callable[[str], str | None]
    launch: Callable[[int, int], LaunchOverrides]
    block_rows_from_block: bool = False


def _transpose_launch(grid: int, block: int) -> LaunchOverrides:
    side = math.isqrt(grid)
    width = side * 32
    return LaunchOverrides.from_strings(grid=f"{side},{side}", block=f"32,{block // 32}",
                                        params=[f"width={width}", f"height={width}"])


def _matmul_launch(grid: int, block: int) -> LaunchOverrides:
    tile = math.isqrt(block)
    if grid == 200:  # the sample's default: A 320 x 320, B 640 x 320, grid (20, 10)
        gx, gy, wa, wb = 20, 10, 320, 640
    else:
        gx = gy = math.isqrt(grid)
        wa = wb = gx * tile
    return LaunchOverrides.from_strings(grid=f"{gx},{gy}", block=f"{tile},{tile}", params=[f"wA={wa}", f"wB={wb}"])


def _clock_launch(grid: int, block: int) -> LaunchOverrides:
    return LaunchOverrides.from_strings(grid=str(grid), block=str(block), smem=2 * block * 4)


def _kernel_of(table: dict[str, str]) -> Callable[[str], str | None]:
    def pick(name: str) -> str | None:
        return next((v for k, v in table.items() if name.startswith(k)), None)
    return pick


PUBLIC = {
    "transpose": Public("Samples/6_Performance/transpose/transpose.cu", _kernel_of(TRANSPOSE), _transpose_launch,
                        block_rows_from_block=True),
    "matrixmul": Public("Samples/0_Introduction/matrixMul/matrixMul.cu",
                        lambda name: "MatrixMulCUDA" if name.startswith("MatrixMul") else None, _matmul_launch),
    "matrixmultiplication": Public("Samples/0_Introduction/matrixMul/matrixMul.cu",
                                   lambda name: "MatrixMulCUDA" if name.startswith("MatrixMul") else None,
                                   _matmul_launch),
    "clock": Public("Samples/0_Introduction/clock/clock.cu",
                    lambda name: "timedReduction" if name in ("timed_reduction", "timedReduction") else None,
                    _clock_launch),
}


def _key(benchmark: str) -> str:
    return re.sub(r"[^a-z0-9]", "", benchmark.lower())


def _source(samples: Path, spec: Public, block: int, tmp: Path) -> Path:
    src = samples / spec.source
    if not spec.block_rows_from_block:
        return src
    rows = block // 32
    out = tmp / f"{src.stem}_rows{rows}.cu"
    if not out.exists():
        text = src.read_text(encoding="utf-8")
        out.write_text(re.sub(r"#define BLOCK_ROWS\s+\d+", f"#define BLOCK_ROWS {rows}", text), encoding="utf-8")
    return out


def evaluate(samples: Path, seed: int = 0) -> dict:
    data = load_all()
    pool = [d for d in data.values() if d.descriptor.get("pooled")]
    results = {}
    reports: dict = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for name, gpu in DATASETS.items():
            ds = data[name]
            recipe = default_recipe(name)
            used = ds.subset(ds.clean) if recipe.clean_rows else ds
            oof = grouped_oof(recipe, used, pool, seed)
            scored: list[Scored] = []
            skipped: list[str] = []
            for i in range(used.rows):
                spec = PUBLIC.get(_key(used.benchmark[i]))
                if spec is None:
                    continue
                kernel = spec.kernel(used.kernel[i].strip())
                grid, block = int(used.columns["grid_size"][i]), int(used.columns["block_size"][i])
                if kernel is None:
                    skipped.append(f"{used.benchmark[i]}/{used.kernel[i]}: no public kernel of that name")
                    continue
                m = MeasuredLaunch(_source(samples, spec, block, tmp), kernel, spec.launch(grid, block),
                                   float(used.power[i]), used.benchmark[i])
                s = score_launch(m, gpu, include_dirs=[str(samples / "Common")], reports=reports)
                if not s.answers:
                    skipped.append(f"{used.benchmark[i]}/{used.kernel[i]} <<<{grid}, {block}>>>: {s.why}")
                    continue
                stat = float(oof[i])
                ev_w, ev_iv = s.answers["events"]
                s.answers = {"statistical (out of fold)": (stat, (stat, stat)), "events": (ev_w, ev_iv),
                             "events shown": (ev_w, (max(ds.descriptor["idle_w"], min(ev_iv[0], stat)),
                                                      min(ds.descriptor["tdp_w"], max(ev_iv[1], stat))))}
                scored.append(s)
            idle, tdp = ds.descriptor["idle_w"], ds.descriptor["tdp_w"]
            results[name] = {"gpu": gpu, "idle_w": idle, "tdp_w": tdp,
                             "benchmarks": sorted({s.launch.benchmark for s in scored}),
                             "models": {k: metrics(scored, k, idle, tdp)
                                        for k in ("statistical (out of fold)", "events", "events shown")},
                             "skipped": skipped,
                             "rows": [{"benchmark": s.launch.benchmark, "kernel": s.launch.kernel,
                                       "measured_w": s.launch.power_w,
                                       **{k: round(v[0], 1) for k, v in s.answers.items()}} for s in scored]}
    return results


def format_text(results: dict) -> str:
    lines = []
    for name, r in results.items():
        lines.append(f"{name} ({r['gpu']}, idle {r['idle_w']:g} W, TDP {r['tdp_w']:g} W): "
                     f"{', '.join(r['benchmarks'])}")
        for model, m in r["models"].items():
            if not m.get("rows"):
                lines.append(f"  {model:26s} no rows")
                continue
            lines.append(f"  {model:26s} rows {m['rows']:3d}  MAPE {m['mape']:5.1f}%  by benchmark "
                         f"{m['mape_by_benchmark']:5.1f}%  within 15% {m['within_15']:4.0%}  coverage "
                         f"{m['coverage']:4.0%}  median width {m['median_width_share']:.2f}")
        lines += [f"  skipped: {s}" for s in r["skipped"][:5]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=Path, required=True, help="a checkout of NVIDIA/cuda-samples")
    ap.add_argument("--format", choices=("text", "json"), default="text")
    args = ap.parse_args(argv)
    if not (args.samples / "Samples").is_dir():
        ap.error(f"--samples: no Samples/ folder in {args.samples}")
    np.seterr(all="ignore")
    results = evaluate(args.samples)
    print(json.dumps(results, indent=1) if args.format == "json" else format_text(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
