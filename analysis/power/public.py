"""Both power models on the power datasets' kernels whose sources are public, at the datasets' launches.

The datasets (data/power/: K20, M60, V100) name their benchmarks and kernels and give each row's grid and block;
several are NVIDIA's CUDA samples. This script analyses those kernels from the samples' public sources at each
row's launch and scores, per GPU and grouped by benchmark:

* the event model (its point and interval, from the source: nothing of the dataset reaches it);
* the statistical default model *out of fold*: predicted for each row by a model trained with that row's whole
  benchmark held out (grouped CV, `evaluate.grouped_oof`), since the shipped model was trained on these rows;
* the shown answer (`auto`, "shown"): the event model's point, its interval widened to the statistical model's
  point.

    kerncast power evaluate --samples DIR [--rodinia DIR] [--format json]

`--samples` is a checkout of github.com/NVIDIA/cuda-samples (its `Samples/` and `Common/`), `--rodinia` one of
Rodinia's GPU suite (e.g. github.com/yuhc/gpu-rodinia, CUDA sources under `cuda/`). The benchmarks: transpose,
matrixMul, clock and histogram of the samples and Rodinia's gaussian (the datasets' other kernels need launch
parameters or inputs the datasets do not give). The samples of today differ
from those the datasets ran in one constant: the transpose sample's BLOCK_ROWS is 16 now and was 8 then (the
datasets' 256-thread blocks are 32 x 8), so the analysed copy sets it from the row's block. Matrix sizes follow
from the grids (square matrices of 32 x 32 tiles; the sample's default 320 x 320 times 640 x 320 for its
200-block grid). Nothing is fitted to these rows: they only score.
"""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.power.combine import hull
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
    """A public benchmark: which sample source and kernel a dataset kernel name is, and a row's launch."""

    kernel: Callable[[str], tuple[str, str] | None]  # dataset kernel name -> (source, kernel), None: not public
    launch: Callable[[str, str, int, int], LaunchOverrides]  # (dataset name, kernel, grid, block) -> the launch
    block_rows_from_block: bool = False
    suite: str = "samples"  # the checkout the source is in: "samples" (NVIDIA/cuda-samples) or "rodinia"


TRANSPOSE_SRC = "Samples/6_Performance/transpose/transpose.cu"
MATMUL_SRC = "Samples/0_Introduction/matrixMul/matrixMul.cu"
CLOCK_SRC = "Samples/0_Introduction/clock/clock.cu"
HIST_DIR = "Samples/2_Concepts_and_Techniques/histogram/"
#: the histogram sample's input: 64 MiB (its default byteCount), read as uint4 by histogram64Kernel and as uint
#: by histogram256Kernel; 240 partial histograms of 256 bins and iDivUp(64 MiB, 64 x 240 B) = 4370 of 64 bins
HIST_BYTES = 64 * 1048576
#: dataset kernel name (some truncated) -> (source, kernel, parameters)
HISTOGRAMS = {
    "histogram64Kernel": (HIST_DIR + "histogram64.cu", "histogram64Kernel", [f"dataCount={HIST_BYTES // 16}"]),
    "histogram256Kerne": (HIST_DIR + "histogram256.cu", "histogram256Kernel", [f"dataCount={HIST_BYTES // 4}"]),
    "mergeHistogram256Kernel": (HIST_DIR + "histogram256.cu", "mergeHistogram256Kernel", ["histogramCount=240"]),
    "mergeHistogram64": (HIST_DIR + "histogram64.cu", "mergeHistogram64Kernel", ["histogramCount=4370"]),
}


def _transpose_launch(name: str, kernel: str, grid: int, block: int) -> LaunchOverrides:
    side = math.isqrt(grid)
    width = side * 32
    return LaunchOverrides.from_strings(grid=f"{side},{side}", block=f"32,{block // 32}",
                                        params=[f"width={width}", f"height={width}"])


def _matmul_launch(name: str, kernel: str, grid: int, block: int) -> LaunchOverrides:
    tile = math.isqrt(block)
    if grid == 200:  # the sample's default: A 320 x 320, B 640 x 320, grid (20, 10)
        gx, gy, wa, wb = 20, 10, 320, 640
    else:
        gx = gy = math.isqrt(grid)
        wa = wb = gx * tile
    return LaunchOverrides.from_strings(grid=f"{gx},{gy}", block=f"{tile},{tile}", params=[f"wA={wa}", f"wB={wb}"])


def _clock_launch(name: str, kernel: str, grid: int, block: int) -> LaunchOverrides:
    return LaunchOverrides.from_strings(grid=str(grid), block=str(block), smem=2 * block * 4)


def _histogram_kernel(name: str) -> tuple[str, str] | None:
    found = next((v for k, v in HISTOGRAMS.items() if name.startswith(k)), None)
    return (found[0], found[1]) if found is not None else None


def _histogram_launch(name: str, kernel: str, grid: int, block: int) -> LaunchOverrides:
    params = next(p for _, k, p in HISTOGRAMS.values() if k == kernel)
    return LaunchOverrides.from_strings(grid=str(grid), block=str(block), params=list(params))


GAUSSIAN_SRC = "cuda/gaussian/gaussian.cu"


def _gaussian_kernel(name: str) -> tuple[str, str] | None:
    """GaussF1_<Size> is Fan1, GaussF2_<Size> is Fan2 (Rodinia's gaussian elimination)."""
    m = re.fullmatch(r"GaussF([12])_(\d+)", name)
    return (GAUSSIAN_SRC, f"Fan{m.group(1)}") if m else None


def _gaussian_launch(name: str, kernel: str, grid: int, block: int) -> LaunchOverrides:
    """Fan1: a 1-D grid; Fan2: square 2-D grid and blocks. The first elimination step (t = 0): the dataset gives
    no step, and at t = 0 every thread of the matrix's rows works."""
    size = int(name.rsplit("_", 1)[1])
    if kernel == "Fan1":
        return LaunchOverrides.from_strings(grid=str(grid), block=str(block), params=[f"Size={size}", "t=0"])
    g, b = math.isqrt(grid), math.isqrt(block)
    return LaunchOverrides.from_strings(grid=f"{g},{g}", block=f"{b},{b}",
                                        params=[f"Size={size}", f"j1={size}", "t=0"])


def _transpose_kernel(name: str) -> tuple[str, str] | None:
    kernel = next((v for k, v in TRANSPOSE.items() if name.startswith(k)), None)
    return (TRANSPOSE_SRC, kernel) if kernel is not None else None


#: the public benchmarks by their dataset group (`PowerDataset.group`: the name normalised, aliases merged)
PUBLIC = {
    "transpose": Public(_transpose_kernel, _transpose_launch, block_rows_from_block=True),
    # the datasets' "matrixMul" and "Matrix Multiplication" are one group (dataset.normalise_benchmark)
    "matrixmultiplication": Public(lambda n: (MATMUL_SRC, "MatrixMulCUDA") if n.startswith("MatrixMul") else None,
                                   _matmul_launch),
    # the clock sample's one kernel is timedReduction (the K20 file also names it after the sample)
    "clock": Public(lambda n: (CLOCK_SRC, "timedReduction") if n in ("timed_reduction", "timedReduction", "clock")
                    else None, _clock_launch),
    "histogram": Public(_histogram_kernel, _histogram_launch),
}
#: Rodinia's kernels take the matrix size from the dataset's kernel name (GaussF2_2048: Fan2 on 2048 x 2048)
RODINIA = {
    "gaussian": Public(_gaussian_kernel, _gaussian_launch, suite="rodinia"),
}


def _source(samples: Path, spec: Public, source: str, block: int, tmp: Path) -> Path:
    src = samples / source
    if not spec.block_rows_from_block:
        return src
    rows = block // 32
    out = tmp / f"{src.stem}_rows{rows}.cu"
    if not out.exists():
        text = src.read_text(encoding="utf-8")
        out.write_text(re.sub(r"#define BLOCK_ROWS\s+\d+", f"#define BLOCK_ROWS {rows}", text), encoding="utf-8")
    return out


def evaluate(samples: Path, seed: int = 0, data_dir: Path | None = None, rodinia: Path | None = None) -> dict:
    """Per dataset GPU: both models' metrics on the public kernels' rows, the rows, and what was skipped.
    `rodinia`: a checkout of a Rodinia suite with its CUDA sources under `cuda/` (None: Rodinia's rows left out)."""
    if not (samples / "Samples").is_dir():
        raise ValueError(f"--samples: no Samples/ folder in {samples} (expected a checkout of NVIDIA/cuda-samples)")
    if rodinia is not None and not (rodinia / "cuda").is_dir():
        raise ValueError(f"--rodinia: no cuda/ folder in {rodinia} (expected a checkout of Rodinia's GPU suite)")
    roots = {"samples": samples, "rodinia": rodinia}
    specs = {**PUBLIC, **(RODINIA if rodinia is not None else {})}
    data = load_all(data_dir)
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
                spec = specs.get(str(used.group[i]))  # the benchmark's name, normalised and aliased
                if spec is None:
                    continue
                found = spec.kernel(used.kernel[i].strip())
                grid, block = int(used.columns["grid_size"][i]), int(used.columns["block_size"][i])
                if found is None:
                    skipped.append(f"{used.benchmark[i]}/{used.kernel[i]}: no public kernel of that name")
                    continue
                source, kernel = found
                root = roots[spec.suite]
                assert root is not None
                m = MeasuredLaunch(_source(root, spec, source, block, tmp), kernel,
                                   spec.launch(used.kernel[i].strip(), kernel, grid, block), float(used.power[i]),
                                   str(used.group[i]))
                s = score_launch(m, gpu, include_dirs=[str(samples / "Common")], reports=reports)
                if not s.answers:
                    skipped.append(f"{used.benchmark[i]}/{used.kernel[i]} <<<{grid}, {block}>>>: {s.why}")
                    continue
                stat = float(oof[i])
                ev_w, ev_iv = s.answers["events"]
                s.answers = {"statistical (out of fold)": (stat, (stat, stat)), "events": (ev_w, ev_iv),
                             "shown": (ev_w, hull(ev_iv, stat, ds.descriptor["idle_w"], ds.descriptor["tdp_w"]))}
                scored.append(s)
            idle, tdp = ds.descriptor["idle_w"], ds.descriptor["tdp_w"]
            results[name] = {"gpu": gpu, "idle_w": idle, "tdp_w": tdp,
                             "benchmarks": sorted({s.launch.benchmark for s in scored}),
                             "models": {k: metrics(scored, k, idle, tdp)
                                        for k in ("statistical (out of fold)", "events", "shown")},
                             # the out-of-fold predictions carry no interval of their own
                             "no_interval": ["statistical (out of fold)"],
                             "skipped": skipped,
                             "rows": [{"benchmark": s.launch.benchmark, "kernel": s.launch.kernel,
                                       "measured_w": s.launch.power_w,
                                       **{k: round(v[0], 1) for k, v in s.answers.items()},
                                       "intervals": {k: [round(v[1][0], 1), round(v[1][1], 1)]
                                                     for k, v in s.answers.items()},
                                       **{f"events {k}": round(float(s.events[k]), 1)
                                          for k in ("static_w", "idle_sms_w", "dynamic_w") if k in s.events},
                                       "predicted_us": s.time_us} for s in scored]}
    return results


def format_text(results: dict) -> str:
    """A block per GPU: a line per model."""
    lines = []
    for name, r in results.items():
        lines.append(f"{name} ({r['gpu']}, idle {r['idle_w']:g} W, TDP {r['tdp_w']:g} W): "
                     f"{', '.join(r['benchmarks'])}")
        for model, m in r["models"].items():
            if not m.get("rows"):
                lines.append(f"  {model:26s} no rows")
                continue
            interval = ("" if model in r["no_interval"] else
                        f"  coverage {m['coverage']:4.0%}  median width {m['median_width_share']:.2f}")
            lines.append(f"  {model:26s} rows {m['rows']:3d}  MAPE {m['mape']:5.1f}%  by benchmark "
                         f"{m['mape_by_benchmark']:5.1f}%  within 15% {m['within_15']:4.0%}{interval}")
        lines += [f"  skipped: {s}" for s in r["skipped"][:5]]
    return "\n".join(lines)
