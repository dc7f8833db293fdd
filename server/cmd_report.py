"""`kerncast report PATH --html OUT.html`: the analysis of one file as a self-contained page with pictures
(roofline chart, time breakdown, per-line energy beside the source, findings), or as text without `--html`.

With `--gpu a100,h100` the file is analysed for each GPU: the first GPU's chart shows the others' points and
each kernel gets a table of its figures on every GPU.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from kerncast.analysis.gpus.profile import ProfileError, load_profile
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.report import FileReport
from kerncast.analysis.targets import default_gpu
from kerncast.server.cmd_analyze import (
    add_launch_arguments,
    add_time_model_argument,
    add_toolchain_arguments,
    options_from_args,
)
from kerncast.server.multi_gpu import analyse_on_gpus, per_gpu_text, split_gpus
from kerncast.server.report_page import GpuFigures, PageInput, render_page
from kerncast.server.roofline_svg import point_of, roofs_of


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="a CUDA C++ (.cu) or PTX (.ptx) file")
    parser.add_argument("--html", metavar="OUT.html", default=None,
                        help="write the report as one self-contained HTML page (no network, no script)")
    gpu = default_gpu(AnalysisOptions().gpu)
    add_toolchain_arguments(parser, f"GPU profile id, or a comma list (a100,h100) to compare GPUs; default {gpu}")
    add_time_model_argument(parser)
    add_launch_arguments(parser)


def build_page(reports: list[FileReport], source: str) -> str:
    """The page for the first report, with the other reports' kernels as the other GPUs' figures."""
    main = reports[0]
    roofs = [roofs_of(load_profile(r.gpu)) for r in reports]  # each profile read once, not once per kernel
    others: dict[str, list[GpuFigures]] = {}
    for k in main.all_kernels():
        for r, r_roofs in zip(reports[1:], roofs[1:], strict=True):
            other = r.kernel(k.mangled) or r.kernel(k.name)
            if other is not None:
                others.setdefault(k.name, []).append(GpuFigures(r_roofs, other, point_of(r_roofs.gpu, other)))
    return render_page(PageInput(report=main, roofs=roofs[0], source=source, others=others))


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same folder, so a failure leaves no half page."""
    fd, tmp = tempfile.mkstemp(prefix=".kerncast-", suffix=".html", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o666 & ~_umask())  # as an ordinary new file would be, not mkstemp's owner-only mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process's umask (reading it means setting it, so it is set straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _check_output(source: Path, out: Path) -> str | None:
    """Why `out` cannot be written, or None: it must not be the analysed file, and its folder must exist."""
    if out.exists() and source.exists() and out.resolve() == source.resolve():
        return f"--html {out} is the analysed file; give another output path"
    if out.suffix.lower() in (".cu", ".cuh", ".ptx", ".h", ".hpp"):
        return f"--html {out} looks like a source file; give a .html path"
    if not out.parent.is_dir():
        return f"--html {out}: folder {out.parent} does not exist"
    return None


def run(args: argparse.Namespace) -> int:
    try:
        gpus = split_gpus(args.gpu)
        options = options_from_args(argparse.Namespace(**{**vars(args), "gpu": gpus[0]}))
    except ValueError as exc:
        print(f"kerncast: {exc}", file=sys.stderr)
        return 2
    source_path = Path(args.path)
    if not source_path.is_file():
        print(f"kerncast: {args.path}: no such file", file=sys.stderr)
        return 2
    out = Path(args.html) if args.html else None
    problem = _check_output(source_path, out) if out is not None else None
    if problem:
        print(f"kerncast: {problem}", file=sys.stderr)
        return 2
    reports = analyse_on_gpus(args.path, options, gpus)
    for f in reports[0].findings:
        if f.severity == "error":
            print(f"{reports[0].file}:{f.line}:{f.column}: error: {f.message}", file=sys.stderr)
    if out is None:
        sys.stdout.write(per_gpu_text(reports))
        return 0 if reports[0].ok else 1
    try:
        page = build_page(reports, source_path.read_text(encoding="utf-8", errors="replace"))
        write_atomically(out, page)
    except (OSError, ProfileError) as exc:
        print(f"kerncast: cannot write {out}: {exc}", file=sys.stderr)
        return 1
    print(f"kerncast: wrote {out} ({len(reports[0].all_kernels())} kernels)")
    return 0 if reports[0].ok else 1
