"""`kerncast lsp`: the language server on stdio, for VS Code, Neovim and any LSP client."""

from __future__ import annotations

import argparse
import logging
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (the default; accepted for "
                        "clients that always pass it)")
    parser.add_argument("--log-file", default=None, metavar="PATH", help="write the server's log to PATH")
    parser.add_argument("--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                        help="log level; default WARNING")


def run(args: argparse.Namespace) -> int:
    if args.log_file:
        logging.basicConfig(filename=args.log_file, level=args.log_level,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    else:
        logging.basicConfig(stream=sys.stderr, level=args.log_level, format="kerncast lsp: %(message)s")
    # lazy import: the language server loads pygls and lsprotocol, which the other commands never need
    from kerncast.server.server import main

    main()
    return 0


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="kerncast lsp")
    add_arguments(_parser)
    sys.exit(run(_parser.parse_args()))
