"""Time the power prediction: a file's kernels in one batched call against one call per kernel.

The power stage predicts every kernel of a file in one call per model (prediction, interval and exact
contributions once per batch, XGBoost with one thread). This prints the median time per kernel of both ways for
batches of the power datasets' own feature rows, so the numbers do not depend on nvcc.

    .venv/bin/python benchmarks/power_speed.py [--gpu v100] [--kernels 20] [--repeat 7]
"""

from __future__ import annotations

import argparse

from kerncast.analysis.power.dataset import load_all
from kerncast.analysis.power.model import predict_powers
from timer import median_ms


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", default="v100")
    ap.add_argument("--kernels", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    ds = load_all()["k20_larger"]
    rows = [{k: float(v[i]) for k, v in ds.columns.items()} for i in range(0, ds.rows, ds.rows // args.kernels)]
    rows = rows[: args.kernels]
    requests = [(r, args.gpu) for r in rows]
    batched = median_ms(lambda: predict_powers(requests, explain=True, lime=False), args.repeat, warm_up=True)
    single = median_ms(lambda: [predict_powers([q], explain=True, lime=False) for q in requests], args.repeat,
                       warm_up=True)
    n = len(requests)
    print(f"{n} kernels on {args.gpu}: batched {batched:.1f} ms ({batched / n:.2f} ms/kernel), "
          f"one call per kernel {single:.1f} ms ({single / n:.2f} ms/kernel)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
