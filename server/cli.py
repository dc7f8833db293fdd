"""The `kerncast` command line: one sub-command per module, each exposing `add_arguments` and `run`.

Sub-command modules are imported lazily so that `kerncast gpus` does not pay for loading XGBoost and
`kerncast lsp` starts quickly.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from kerncast.analysis.collector import tune_collector

#: sub-command -> (module under kerncast.server, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "analyze": ("cmd_analyze", "analyse .cu/.ptx files or directories and print each kernel's report"),
    "power": ("cmd_power", "train and evaluate the power models"),
    "gpus": ("cmd_gpus", "list the GPU profiles and what is calibrated"),
    "rules": ("cmd_rules", "list the finding codes, or explain one (kerncast rules CODE)"),
    "calibrate": ("cmd_calibrate", "measure the local NVIDIA GPU with microbenchmarks and write its profile"),
    "measure": ("cmd_measure", "run one kernel on the local GPU and print its measured time and power"),
    "compare": ("cmd_compare", "put an Nsight Compute report (.ncu-rep or ncu --csv) next to the predictions"),
    "report": ("cmd_report", "write one file's report as a self-contained HTML page with a roofline chart"),
    "diff": ("cmd_diff", "compare a file's kernels with the file at a git revision or another file"),
    "lsp": ("cmd_lsp", "start the language server on stdio"),
}


def build_parser(selected: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; only the `selected` sub-command's module is imported and given its arguments.

    The other sub-commands are listed with their help line alone, so `kerncast lsp` never imports the power
    model and a problem in one command's module cannot break another command.
    """
    parser = argparse.ArgumentParser(
        prog="kerncast",
        description="Predict CUDA kernel time, power and energy, and find wasteful code, without a GPU.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        if name == selected:
            mod = importlib.import_module(f"kerncast.server.{module}")
            mod.add_arguments(sp)
            sp.set_defaults(_module=mod)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `kerncast` console script; returns the process exit status."""
    argv = sys.argv[1:] if argv is None else argv
    tune_collector()
    selected = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(selected if selected in COMMANDS else None)
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
