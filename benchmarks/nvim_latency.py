"""Save -> diagnostics in a real Neovim, against a bare `nvcc -ptx` of the same file, in one run.

Starts headless Neovim with the documented setup (`tests/nvim/init.lua`, server `kerncast lsp`) on a copy of
`benchmarks/data/kernels20.cu` (20 kernels), then times rounds of two saves each (`nvim_latency.lua`): an
edit that moves every kernel's lines (no kernel is analysed again: each previous report is shifted to the new
lines) and an edit that changes one kernel (the others come from the server's per-kernel cache): by default a
constant toggled, so that from the second round on the kernel's text is one the server has seen and ptxas's
numbers for it are kept; with `--new-code` a constant no save had before, so that ptxas runs on the changed
kernel as after a real edit (some 20 ms for one kernel, on the save's path). The baseline
is `nvcc -ptx -arch=sm_75` of the same file, run by the Neovim driver right after each save, so that each save
is compared with a compile made under the same load of the machine. Prints the medians of the saves, of the
baselines and of the per-save ratios (targets: 1.15 and 1.1); the server's resident memory is measured by
`lsp_latency.py`.

    .venv/bin/python benchmarks/nvim_latency.py [--rounds 5] [--new-code] [FILE.cu]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from kerncast.analysis.compile import find_toolchain

ROOT = Path(__file__).resolve().parent.parent
NVIM_DIR = ROOT / "tests" / "nvim"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=ROOT / "benchmarks" / "data" / "kernels20.cu")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--new-code", action="store_true",
                        help="the one-kernel edit writes code no save had before (ptxas runs on it each time)")
    args = parser.parse_args()
    nvim = shutil.which("nvim")
    if nvim is None:
        print("nvim not found (Debian package `neovim`)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / args.file.name
        shutil.copy(args.file, src)
        out = Path(tmp) / "latency.json"
        env = dict(os.environ, KERNCAST_NVIM_OUT=str(out), KERNCAST_NVIM_FILE=str(src),
                   KERNCAST_NVIM_ROUNDS=str(args.rounds), HOME=tmp, XDG_CONFIG_HOME=tmp,
                   KERNCAST_NVIM_NVCC=str(find_toolchain().nvcc), KERNCAST_NVIM_ARCH="sm_75",
                   KERNCAST_NVIM_NEW_CODE="1" if args.new_code else "",
                   KERNCAST_CMD=json.dumps([sys.executable, "-m", "kerncast.server", "lsp"]))
        subprocess.run([nvim, "--headless", "-n", "-i", "NONE", "-u", str(NVIM_DIR / "init.lua"),
                        "-c", f"luafile {ROOT / 'benchmarks' / 'nvim_latency.lua'}"],
                       cwd=tmp, env=env, capture_output=True, text=True, timeout=1800)
        result = json.loads(out.read_text()) if out.exists() else {"ok": False, "error": "no result written"}
        if not result.get("ok"):
            print(f"the Neovim run failed: {result.get('error')}", file=sys.stderr)
            return 1
    print(f"{args.file.name}: first diagnostics after opening {result['first']:.2f} s (server start included)")
    one = "save, one kernel changed (new code):" if args.new_code else "save, one kernel changed:"
    cases = (("all", "save, every kernel moved:", 1.15), ("one", one, 1.1))
    for kind, label, target in cases:
        saves, bases = result[kind], result[f"base_{kind}"]
        ratio = statistics.median(s / b for s, b in zip(saves, bases, strict=True))
        print(f"{label:<36} {statistics.median(saves) * 1e3:5.0f} ms, bare nvcc -ptx "
              f"{statistics.median(bases) * 1e3:5.0f} ms, ratio {ratio:.2f} (median per save; target <= {target})")
    for kind in ("all", "one"):
        print(f"{kind} (s): saves " + " ".join(f"{x:.3f}" for x in result[kind])
              + " | nvcc " + " ".join(f"{x:.3f}" for x in result[f"base_{kind}"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
