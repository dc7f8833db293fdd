"""Both power models on the power datasets' kernels whose sources are public (see `kerncast.analysis.power.public`).

    .venv/bin/python benchmarks/validate_power_public.py --samples <NVIDIA/cuda-samples checkout> [--format json]

The same as `kerncast power evaluate --samples DIR`; nothing is fitted to these rows.
"""

from __future__ import annotations

import sys

from kerncast.server.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["power", "evaluate", *sys.argv[1:]]))
