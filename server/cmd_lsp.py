"""`kerncast lsp`: the language server on stdio, for VS Code, Neovim and any LSP client."""

from __future__ import annotations

import argparse
import logging
import os
import sys

#: the environment variable that chooses CPython's allocator, and the choice the language server makes
ALLOCATOR_VARIABLE, SERVER_ALLOCATOR = "PYTHONMALLOC", "malloc"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (the default; accepted for "
                        "clients that always pass it)")
    parser.add_argument("--log-file", default=None, metavar="PATH", help="write the server's log to PATH")
    parser.add_argument("--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                        help="log level; default WARNING")


def with_c_allocator() -> None:
    """Run the server on the C allocator: re-execute this process (same pid and pipes, before any request is
    read) with PYTHONMALLOC=malloc, unless the variable is set already (a user's choice is kept).

    An analysis of a large PTX file makes millions of small objects. CPython's own allocator keeps each 1 MB
    arena it took for them while any object in it lives, and the few that outlive an analysis are spread over
    many: nine 3 MB documents closed mid-analysis left the server 120 MB larger for good. On the C allocator the
    freed memory goes back to the system (`server.release_memory` trims the heap): 28 to 40 MB
    (benchmarks/closed_documents_rss.py), for about 5% more CPU per analysis (20.6 s against 19.7 s for a
    64-kernel PTX on a loaded machine)."""
    if not sys.platform.startswith("linux") or ALLOCATOR_VARIABLE in os.environ or not sys.orig_argv:
        return
    os.execve(sys.executable, sys.orig_argv, {**os.environ, ALLOCATOR_VARIABLE: SERVER_ALLOCATOR})


def run(args: argparse.Namespace) -> int:
    with_c_allocator()
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
