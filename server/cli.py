"""The `kerncast` command line: one sub-command per module, each exposing `add_arguments` and `run`.

Sub-command modules are imported lazily so that `kerncast gpus` does not pay for loading XGBoost and
`kerncast lsp` starts quickly.
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: sub-command -> (module under kerncast.server, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "analyze": ("cmd_analyze", "analyse a .cu or .ptx file and print each kernel's report"),
    "gpus": ("cmd_gpus", "list the GPU profiles and what is calibrated"),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command's arguments."""
    parser = argparse.ArgumentParser(
        prog="kerncast",
        description="Predict CUDA kernel time, power and energy, and find wasteful code, without a GPU.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        mod = importlib.import_module(f"kerncast.server.{module}")
        mod.add_arguments(sp)
        sp.set_defaults(_module=mod)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `kerncast` console script; returns the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args._module.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
