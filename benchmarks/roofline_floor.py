"""How many kernels of public code bases Kerncast predicts faster than their own roofline's best case.

The roofline's best case (`timing/roofline.py`) is the time no kernel can beat for the work the analysis counts:
its FLOPs at the vendor peak, its compulsory DRAM bytes at the peak bandwidth, its load/store instructions at
the SMs' issue rate, its integer instructions over the integer pipes. A default-model prediction below it
claims more than the GPU can do. Fetches nothing: give it directories of public CUDA code (HeCBench,
PolyBench-ACC, Parboil, ...); it analyses a deterministic sample of the `.cu` files below each through the
whole pipeline (`analyze_file`: the launch read from the file's `<<<>>>` sites, the stand-ins a user's file
gets included, the code base's shared header folders on the include path) and prints, per code base and overall,
the kernels with a time and those below their best case, each with its figures under `--list`.

    nice .venv/bin/python benchmarks/roofline_floor.py /tmp/corpus/PolyBench-ACC/CUDA \\
        /tmp/corpus/Parboil/benchmarks /tmp/corpus/HeCBench/src --sample 60 [--gpu h100] [--list]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file

_SPEC = importlib.util.spec_from_file_location("unknown_access", Path(__file__).with_name("unknown_access.py"))
_UA = importlib.util.module_from_spec(_SPEC)  # type: ignore[arg-type]
sys.modules["unknown_access"] = _UA
_SPEC.loader.exec_module(_UA)  # type: ignore[union-attr]

#: a prediction this far under its best case is below it (the two are computed in floating point)
_TOLERANCE = 1e-9


@dataclass
class Tally:
    """The figures of one code base."""

    name: str
    files: int = 0
    kernels: int = 0
    timed: int = 0
    below: int = 0
    listing: list[str] = field(default_factory=list)


def run_base(root: Path, gpu: str, n: int | None) -> Tally:
    """Every sampled file of one code base, analysed as the editor would (the same sample `unknown_access.py`
    takes)."""
    tally = Tally(str(root))
    incs = _UA.include_dirs(root)
    for cu in _UA.sample(sorted(p for p in root.rglob("*.cu") if p.is_file()), n):
        tally.files += 1
        options = AnalysisOptions(gpu=gpu, include_dirs=[str(cu.parent), *incs], lime=False,
                                  compile_commands=False)
        for k in analyze_file(cu, options=options).kernels:
            tally.kernels += 1
            t = k.time
            if t is None or not t.roofline_us:
                continue
            tally.timed += 1
            best = t.roofline_us[0]
            if t.us < best * (1.0 - _TOLERANCE):
                tally.below += 1
                tally.listing.append(f"{cu}: {k.name[:50]}: {t.us:.4g} us, roofline best {best:.4g} us "
                                     f"({t.bottleneck})")
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("roots", nargs="+", type=Path, help="code bases on disk")
    parser.add_argument("--sample", type=int, default=None, help="about this many .cu files per code base")
    parser.add_argument("--gpu", default="h100")
    parser.add_argument("--list", action="store_true", help="print every kernel below its best case")
    args = parser.parse_args()
    start = time.perf_counter()
    tallies = [run_base(root.resolve(), args.gpu, args.sample) for root in args.roots]
    print(f"GPU {args.gpu}")
    print(f"{'code base':50} {'files':>6} {'kernels':>8} {'timed':>6} {'below':>6}")
    for t in tallies:
        print(f"{t.name[-50:]:50} {t.files:6} {t.kernels:8} {t.timed:6} {t.below:6}")
        if args.list:
            for line in t.listing:
                print("   ", line)
    files, kernels, timed, below = (sum(getattr(t, f) for t in tallies) for f in ("files", "kernels", "timed",
                                                                                  "below"))
    print(f"{'total':50} {files:6} {kernels:8} {timed:6} {below:6}")
    print(f"predictions faster than their own roofline's best case: {below} of {timed} timed kernels; "
          f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
