"""Ground truth for one GPU in one command: calibrate, measure 150+ kernels, write the profile and the report.

On a machine with an NVIDIA GPU (the `cuda` and `gpu` extras installed):

    python benchmarks/gpu_campaign.py --gpu-id h100 [--base h100] [--max-minutes 9] [--jobs 16]

1. calibration: the SASS of the microbenchmarks is checked for the GPU's architecture (as in the test suite),
   then `kerncast calibrate` writes analysis/gpus/<id>.toml (both skipped when that profile's latency section
   is already measured);
2. builds: one measurement harness per kernel (the launch is given at run time), all built in parallel;
3. measurements: every case (a kernel at one launch) timed with CUDA events until stable while NVML samples the
   board power, each row appended to validation/<id>/measurements.csv as soon as it is measured;
4. report: every measured row predicted with the new profile; validation/<id>/REPORT.md gives each time model's
   and the power model's MAPE and share within 25 % overall and per kernel class, with predicted-against-
   measured plots (PNG, when matplotlib is installed); validation/<id>/power_rows.csv holds the measured power
   rows (kernel, launch, watts, time) that the power model's training reads with features from the analysis.

The cases are the project's kernels (`benchmarks/measure_gpu.py`: examples, tests/kernels, benchmarks/data) at a
small and a large launch, every version of the ladder suite (validation/ladders) at its measured launch, and the
coverage kernels of `benchmarks/campaign_kernels.py` (FP64, SFU, tensor cores, atomics, local memory,
divergence, shared memory, streaming, strided, sync and cache) at two or three launches.

Resumable: a second run skips the calibration when the profile is calibrated, the builds already made, and the
rows already in measurements.csv; `--max-minutes` stops measuring in time for a command limit, and the same
command carries on. `--dry-run` does everything but the GPU steps (it builds the calibration harness and the
measurement harnesses, checks every case's kernel in its source, predicts every case and writes the plan and an
empty report) into `--out-root`, so a machine without a GPU checks the whole campaign before one is available.
`--report-only` runs step 4 alone on the rows already measured (no GPU): the report after a model changed.
No constant of any model is fitted to these measurements.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import hashlib
import json
import os
import runpy
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import campaign_kernels
import validate_ladders
from kerncast.analysis import gpus
from kerncast.analysis.calibration.build import build_executable, copy_calibration_sources
from kerncast.analysis.calibration.errors import CalibrationError, NoGpuError
from kerncast.analysis.calibration.measure import LaunchSpec, kernel_parameter_names, parse_dims
from kerncast.analysis.calibration.runs import (
    CSV_COLUMNS,
    append_csv,
    build_measure_harness,
    measure_built,
    probe,
)
from kerncast.analysis.calibration.sass import SassToolError, compile_sass
from kerncast.analysis.calibration.sass_expect import check_calibration_sass
from kerncast.analysis.calibration.stats import StopRule
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.toolchain import ToolchainError

ROOT = Path(__file__).resolve().parent.parent
#: the project's cases and their kernel families (sibling scripts, run by path)
_VALIDATE = runpy.run_path(str(Path(__file__).with_name("validate_measured.py")))
PROJECT_CASES, FAMILIES = _VALIDATE["CASES"], _VALIDATE["FAMILIES"]
#: the launch dimensions' reading and the MAPE table of the project's validation, shared with it
launch_dims, mape_table = _VALIDATE["launch_dims"], _VALIDATE["mape_table"]
MiB = 1 << 20
TIME_MODELS = ("kerncast", "thesis", "mwp-cwp")
#: extra columns of measurements.csv beyond the standard ones of `kerncast measure --append-csv`
EXTRA_COLUMNS = ("params", "buffer_bytes", "class", "size", "stable", "robust_cv", "power_samples", "power_method")
#: the launches of a coverage kernel: (size, grid, block); the single warp only for compute-bound classes
COVERAGE_LAUNCHES = (("small", 64, 256), ("large", 8192, 256))
SINGLE_WARP = ("single warp", 1, 32)
SINGLE_WARP_CLASSES = ("fp64", "sfu", "fp32 / int", "fp16 / int division", "tensor cores")
#: buffers of a ladder version: its problem sizes reach 2^30 ints (the H100 vector sum)
LADDER_BYTES = {"h100-vector-sum": (1 << 30) * 4 + MiB}
LADDER_DEFAULT_BYTES = 256 * MiB + MiB
#: measurement rule of the campaign: shorter than `kerncast measure`'s so that 300+ launches fit in minutes,
#: long enough (0.6 s) for several NVML power readings
CAMPAIGN_RULE = StopRule(cv_target=0.02, min_reps=20, max_reps=100_000, min_seconds=0.6, max_seconds=4.0)


@dataclass(frozen=True)
class CampaignCase:
    """One kernel at one launch: source file relative to the root, kernel, class, launch and buffer bytes."""

    file: str
    kernel: str
    klass: str
    size: str
    grid: str
    block: str
    params: tuple[str, ...] = ()
    smem: int | None = None
    nbytes: int | None = None
    min_cc: int = 0

    def key(self) -> tuple:
        """What identifies a measured row (resumption skips a case whose key is in measurements.csv)."""
        return (self.file, self.kernel, launch_dims(self.grid), launch_dims(self.block),
                tuple(sorted(self.params)))

    def spec(self, device: int) -> LaunchSpec:
        return LaunchSpec(kernel=self.kernel, grid=parse_dims(self.grid), block=parse_dims(self.block),
                          dynamic_shared_bytes=self.smem or 0, buffer_bytes=self.nbytes,
                          params=dict(p.split("=", 1) for p in self.params), device=device)


def project_cases() -> list[CampaignCase]:
    """The cases of measure_gpu.py, each with its kernel family and launch size."""
    out = []
    for case in PROJECT_CASES:
        same = [c for c in PROJECT_CASES if c.file == case.file and c.kernel == case.kernel]
        size = "single" if len(same) == 1 else ("small" if same.index(case) == 0 else "large")
        out.append(CampaignCase(case.file, case.kernel, FAMILIES.get(case.kernel, "project"), size, case.grid,
                                case.block, tuple(case.params), case.smem, case.nbytes))
    return out


def ladder_cases(root: Path = ROOT) -> list[CampaignCase]:
    """Every version of every ladder at its measured launch (the first launch of a multi-launch version)."""
    out: dict[tuple, CampaignCase] = {}
    for ladder in validate_ladders.load_ladders(root / "validation" / "ladders"):
        nbytes = LADDER_BYTES.get(ladder.id, LADDER_DEFAULT_BYTES)
        for version in ladder.versions:
            launch = version.launches[0]
            case = CampaignCase(version.file.relative_to(root).as_posix(), version.kernel, f"ladder {ladder.id}",
                                "measured", launch.grid, launch.block, launch.params, launch.smem or None, nbytes)
            out.setdefault(case.key(), case)
    return list(out.values())


def coverage_cases() -> list[CampaignCase]:
    """The generated coverage kernels at their launches."""
    out = []
    for stem, kernels in campaign_kernels.coverage_kernels().items():
        file = (campaign_kernels.OUT_DIR / f"{stem}.cu").relative_to(ROOT).as_posix()
        for k in kernels:
            launches = [*COVERAGE_LAUNCHES, *([SINGLE_WARP] if k.klass in SINGLE_WARP_CLASSES else [])]
            for size, grid, block in launches:
                n = grid * block
                out.append(CampaignCase(file, k.name, k.klass, size, str(grid), str(block),
                                        (f"n={n}", f"iters={k.iters}"), None, max(MiB, n * k.span * 8),
                                        k.min_cc))
    return out


def all_cases(only: str | None = None, limit: int | None = None) -> list[CampaignCase]:
    cases = [*project_cases(), *ladder_cases(), *coverage_cases()]
    if only:
        cases = [c for c in cases if only in c.file or only in c.kernel or only in c.klass]
    return cases[:limit] if limit else cases


def distinct_kernels(cases: list[CampaignCase]) -> list[tuple[str, str]]:
    """(file, kernel) pairs in case order, each once."""
    return list(dict.fromkeys((c.file, c.kernel) for c in cases))


# ------------------------------------------------------------------------------------------ outputs


@dataclass(frozen=True)
class Outputs:
    """Where a campaign writes: the profile, the measurements, the report and its plots, the power rows."""

    root: Path
    gpu_id: str

    @property
    def profile(self) -> Path:
        return self.root / "analysis" / "gpus" / f"{self.gpu_id}.toml"

    @property
    def folder(self) -> Path:
        return self.root / "validation" / self.gpu_id

    @property
    def measurements(self) -> Path:
        return self.folder / "measurements.csv"

    @property
    def report(self) -> Path:
        return self.folder / "REPORT.md"

    @property
    def power_rows(self) -> Path:
        return self.folder / "power_rows.csv"

    @property
    def plan(self) -> Path:
        return self.folder / "campaign_plan.json"

    @property
    def failures(self) -> Path:
        return self.folder / "campaign_failures.txt"


def measured_keys(path: Path) -> set[tuple]:
    """Keys of the rows already in measurements.csv (resumption)."""
    if not path.is_file():
        return set()
    with path.open(encoding="utf-8") as fh:
        return {_row_key(rec) for rec in csv.DictReader(fh)}


def _row_key(rec: dict[str, str]) -> tuple:
    params = tuple(sorted(p for p in (rec.get("params") or "").split(";") if p))
    return (rec["source_file"], rec["kernel"], launch_dims(rec["grid"]), launch_dims(rec["block"]), params)


def widen_header(path: Path) -> None:
    """Give a measurements.csv written by `kerncast measure --append-csv` (standard columns only) the campaign's
    extra columns, its rows kept as they are with those columns empty."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if list(reader.fieldnames or []) == [*CSV_COLUMNS, *EXTRA_COLUMNS]:
            return
        rows = list(reader)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=[*CSV_COLUMNS, *EXTRA_COLUMNS], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def append_row(path: Path, case: CampaignCase, m, today: dt.date | None = None) -> None:
    """One measured case as a measurements.csv row (standard columns, then the campaign's extras)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    widen_header(path)
    append_csv(path, m, today, extra={"source_file": case.file, "params": ";".join(case.params),
                                      "buffer_bytes": case.nbytes or "", "class": case.klass, "size": case.size,
                                      "robust_cv": f"{m.timing.robust_cv:.4f}"},
               columns=[*CSV_COLUMNS, *EXTRA_COLUMNS])


# ------------------------------------------------------------------------------------------ GPU-side steps


def profile_is_calibrated(path: Path) -> bool:
    """Whether a profile file exists with its latency section measured (the calibration then is done)."""
    if not path.is_file():
        return False
    try:
        return bool(tomllib.loads(path.read_text(encoding="utf-8")).get("latency", {}).get("calibrated"))
    except tomllib.TOMLDecodeError:
        return False


def calibration_command(out: Outputs, args: argparse.Namespace) -> list[str]:
    cmd = [sys.executable, "-m", "kerncast.server", "calibrate", "--out", str(out.profile), "--id", out.gpu_id,
           "--device", str(args.device)]
    if args.base:
        cmd += ["--base", args.base]
    if args.quick_calibration:
        cmd.append("--quick")
    return cmd + (["--nvcc", args.nvcc] if args.nvcc else [])


def sass_problems(cc: tuple[int, int]) -> list[str] | None:
    """The SASS checks of the calibration microbenchmarks for the target (None when nvdisasm is missing)."""
    with tempfile.TemporaryDirectory(prefix="kerncast-campaign-sass-") as tmp:
        source = copy_calibration_sources(Path(tmp))
        try:
            return check_calibration_sass(compile_sass(source, f"sm_{cc[0]}{cc[1]}"))
        except SassToolError as exc:
            print(f"SASS checks not run: {exc}")
            return None


def build_calibration_harness(cc: tuple[int, int], nvcc: str | None) -> Path:
    """The calibration harness built as `kerncast calibrate` builds it (a dry run's check that it compiles)."""
    tmp = Path(tempfile.mkdtemp(prefix="kerncast-campaign-cal-"))
    return build_executable(copy_calibration_sources(tmp), tmp, cc, nvcc)


def build_all(cases: list[CampaignCase], build_dir: Path, cc: tuple[int, int], nvcc: str | None, jobs: int,
              log=print) -> dict[tuple[str, str], Path | str]:
    """One harness per (file, kernel), built in parallel; value: the executable, or the error text."""
    results: dict[tuple[str, str], Path | str] = {}
    todo = []
    for file, kernel in distinct_kernels([c for c in cases if c.min_cc <= cc[0] * 10 + cc[1]]):
        folder = build_dir / hashlib.sha1(f"{file}\0{kernel}\0{cc}".encode()).hexdigest()[:16]
        exe = folder / "kerncast_measure"
        if exe.is_file():
            results[(file, kernel)] = exe
        else:
            todo.append((file, kernel, folder))

    def build(item: tuple[str, str, Path]) -> tuple[tuple[str, str], Path | str]:
        file, kernel, folder = item
        folder.mkdir(parents=True, exist_ok=True)
        try:
            return (file, kernel), build_measure_harness(ROOT / file, kernel, folder, cc, nvcc)
        except (CalibrationError, ToolchainError, OSError) as exc:
            return (file, kernel), str(exc).strip().splitlines()[-1] if str(exc).strip() else repr(exc)

    log(f"building {len(todo)} measurement harnesses ({len(results)} already built) with {jobs} jobs ...")
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for key, value in pool.map(build, todo):
            results[key] = value
    return results


def still_to_measure(cases: list[CampaignCase], out: Outputs) -> list[CampaignCase]:
    """The cases without a row in measurements.csv: a resumed campaign builds only their harnesses, since the
    build folder rarely travels with the measurements to the next GPU machine."""
    done = measured_keys(out.measurements)
    return [c for c in cases if c.key() not in done]


def measure_all(cases: list[CampaignCase], built: dict, out: Outputs, device: int, deadline: float,
                log=print) -> tuple[int, int, bool]:
    """Measure every case not yet in measurements.csv; (measured, failed, finished before the deadline)."""
    todo = still_to_measure(cases, out)
    measured = failed = 0
    for n, case in enumerate(todo, 1):
        if time.monotonic() > deadline:
            log(f"time budget reached with {len(todo) - n + 1} cases left: run the same command again to go on")
            return measured, failed, False
        exe = built.get((case.file, case.kernel))
        label = f"[{n}/{len(todo)}] {case.kernel} <<<{case.grid}, {case.block}>>> ({case.klass})"
        if not isinstance(exe, Path):
            _fail(out, label, f"not built: {exe}")
            failed += 1
            continue
        try:
            m = measure_built(exe, ROOT / case.file, case.spec(device), CAMPAIGN_RULE)
        except NoGpuError:
            raise
        except (CalibrationError, OSError, ValueError) as exc:
            _fail(out, label, str(exc))
            failed += 1
            continue
        append_row(out.measurements, case, m)
        measured += 1
        log(f"{label}: {m.time_us:.2f} us, {m.power_w or float('nan'):.0f} W")
    return measured, failed, True


def _fail(out: Outputs, label: str, reason: str) -> None:
    print(f"{label}: FAILED: {reason}", flush=True)
    out.failures.parent.mkdir(parents=True, exist_ok=True)
    with out.failures.open("a", encoding="utf-8") as fh:
        fh.write(f"{label}: {reason}\n")


# ------------------------------------------------------------------------------------------ predictions


def _predict_group(job: tuple[str, str, str, tuple[str, ...], int | None, str]) -> dict[str, dict]:
    """Analyse one file at one launch (a worker process); kernel name -> its models, range and power."""
    file, grid, block, params, smem, gpu = job
    overrides = LaunchOverrides.from_strings(grid=grid, block=block, params=list(params), smem=smem)
    report = analyze_file(ROOT / file, options=AnalysisOptions(gpu=gpu, overrides=overrides))
    out = {}
    for k in report.kernels:
        if k.time is None:
            continue
        p = k.power
        out[k.name] = {"models": dict(k.time.models), "range": list(k.time.range_us or (k.time.us, k.time.us)),
                       "power_w": p.watts if p is not None else None}
    return out


def predict(cases: list[CampaignCase], gpu: str, jobs: int) -> dict[tuple, dict]:
    """Every case's predictions with profile `gpu`, the source analysed once per (file, launch), in parallel."""
    ordered = sorted({(c.file, c.grid, c.block, c.params, c.smem, gpu) for c in cases}, key=str)
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = dict(zip(ordered, pool.map(_predict_group, ordered), strict=True))
    out = {}
    for c in cases:
        per_kernel = results[(c.file, c.grid, c.block, c.params, c.smem, gpu)]
        found = per_kernel.get(c.kernel) or next((v for name, v in per_kernel.items()
                                                  if name.split("(")[0] == c.kernel), None)
        if found is not None:
            out[c.key()] = found
    return out


# ------------------------------------------------------------------------------------------ report


@dataclass(frozen=True)
class MeasuredRow:
    """A measured launch joined with its case and its predictions (every time model's, the range, the power)."""

    case: CampaignCase
    time_us: float
    power_w: float | None
    models: dict[str, float]
    range: tuple[float, float]
    power_pred: float | None


def report_rows(out: Outputs, cases: list[CampaignCase], predictions: dict[tuple, dict]) -> list[MeasuredRow]:
    """Measured rows joined with their case and prediction."""
    by_key = {c.key(): c for c in cases}
    rows = []
    if not out.measurements.is_file():
        return rows
    with out.measurements.open(encoding="utf-8") as fh:
        for rec in csv.DictReader(fh):
            key = _row_key(rec)
            if key in by_key and key in predictions:
                pred = predictions[key]
                rows.append(MeasuredRow(by_key[key], float(rec["time_us"]),
                                        float(rec["power_w"]) if rec.get("power_w") else None, pred["models"],
                                        tuple(pred["range"]), pred["power_w"]))
    return rows


def report_tables(rows: list[MeasuredRow]) -> list[str]:
    """MAPE and share within 25 % per time model and for power, overall and per class and launch size."""
    lines = mape_table(rows, lambda r: r.case.klass, lambda r: r.case.size, TIME_MODELS)
    inside = sum(r.range[0] <= r.time_us <= r.range[1] for r in rows)
    lines += ["", f"Measured time inside the shown kerncast range: {inside} of {len(rows)} rows."]
    return lines


def write_plots(rows: list[MeasuredRow], folder: Path) -> list[str]:
    """Predicted-against-measured PNGs (time per model, power); the reason instead when matplotlib is missing."""
    try:
        import matplotlib  # lazy import: optional, only the report's plots need it

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # lazy import: after choosing the file backend
    except ImportError as exc:
        return [f"(no plots: matplotlib is not installed here: {exc})"]
    written = []
    series = [(m, [(r.time_us, r.models[m]) for r in rows if r.models.get(m)], "µs") for m in TIME_MODELS]
    series.append(("power", [(r.power_w, r.power_pred) for r in rows if r.power_pred and r.power_w], "W"))
    for name, pairs, unit in series:
        if not pairs:
            continue
        fig, ax = plt.subplots(figsize=(5, 5))
        xs, ys = zip(*pairs, strict=True)
        ax.scatter(xs, ys, s=8)
        lo, hi = min(min(xs), min(ys)), max(max(xs), max(ys))
        ax.plot([lo, hi], [lo, hi], color="grey", linewidth=0.8)
        if unit == "µs":
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlabel(f"measured ({unit})")
        ax.set_ylabel(f"predicted ({unit})")
        ax.set_title(f"{name}: {len(pairs)} launches")
        path = folder / f"predicted_vs_measured_{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        written.append(f"![{name}]({path.name})")
    return written


def write_report(out: Outputs, cases: list[CampaignCase], predictions: dict[tuple, dict], dry_run: bool,
                 profile: str) -> str:
    """REPORT.md: what was planned, measured and predicted, the tables and the plots."""
    rows = report_rows(out, cases, predictions)
    kernels = len({(c.file, c.kernel) for c in cases})
    lines = [f"# Predictions against measurement: {out.gpu_id}", "",
             f"Generated by `benchmarks/gpu_campaign.py --gpu-id {out.gpu_id}`: {len(cases)} planned launches of "
             f"{kernels} distinct kernels, {len(rows)} measured and predicted with the profile "
             f"`{profile}`. MAPE: mean absolute percentage error; within 25%: share of rows "
             "whose prediction is within 25% of the measurement. No constant of any model was fitted to these rows.",
             ""]
    if dry_run:
        lines += [f"Dry run: nothing was measured; {len(predictions)} of the {len(cases)} planned launches have a "
                  "prediction. The tables fill in when the campaign runs on the GPU.", ""]
    if rows:
        lines += report_tables(rows) + [""] + write_plots(rows, out.folder)
    text = "\n".join(lines) + "\n"
    out.report.write_text(text, encoding="utf-8")
    return text


def write_power_rows(out: Outputs, cases: list[CampaignCase]) -> int:
    """The measured power rows: kernel, launch, watts and time, with the source the features are taken from."""
    by_key = {c.key(): c for c in cases}
    rows = []
    if out.measurements.is_file():
        with out.measurements.open(encoding="utf-8") as fh:
            for rec in csv.DictReader(fh):
                case = by_key.get(_row_key(rec))
                if case is not None and rec.get("power_w"):
                    rows.append({"Benchmark": Path(case.file).parent.name + "/" + Path(case.file).stem,
                                 "Kernel Name": case.kernel, "grid_size": rec["grid"], "block_size": rec["block"],
                                 "Power": rec["power_w"], "time_us": rec["time_us"], "source_file": case.file,
                                 "params": ";".join(case.params), "class": case.klass})
    with out.power_rows.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["Benchmark", "Kernel Name", "grid_size", "block_size", "Power",
                                                "time_us", "source_file", "params", "class"])
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


# ------------------------------------------------------------------------------------------ main


def check_sources(cases: list[CampaignCase]) -> list[str]:
    """Cases whose kernel the source does not define (caught before any build or GPU time)."""
    problems = []
    for file, kernel in distinct_kernels(cases):
        path = ROOT / file
        if not path.is_file():
            problems.append(f"{file}: missing")
            continue
        try:
            kernel_parameter_names(path.read_text(encoding="utf-8", errors="replace"), kernel)
        except CalibrationError as exc:
            problems.append(f"{file}: {exc}")
    return problems


def target_cc(args: argparse.Namespace) -> tuple[int, int]:
    """The architecture to build for: the GPU's (NVML), else the base profile's (a dry run)."""
    info = None if args.dry_run else probe(args.device)
    if info is not None:
        return info.compute_capability
    return gpus.load_profile(args.base or "h100").compute_capability


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu-id", required=True, help="profile id to write (analysis/gpus/<id>.toml, validation/<id>/)")
    ap.add_argument("--base", help="shipped profile supplying what no benchmark measures (default: chosen by "
                                   "`kerncast calibrate`); a dry run predicts with it (default h100)")
    ap.add_argument("--device", type=int, default=0, help="CUDA device index")
    ap.add_argument("--dry-run", action="store_true", help="everything but the GPU steps, into --out-root")
    ap.add_argument("--report-only", action="store_true",
                    help="only step 4: predict the rows already in measurements.csv and write REPORT.md (no GPU)")
    ap.add_argument("--out-root", type=Path, help="where analysis/gpus and validation/ are written (default: the "
                                                  "repository; a dry run needs one)")
    ap.add_argument("--only", help="cases whose file, kernel or class contains this")
    ap.add_argument("--limit", type=int, help="the first N cases only")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel builds and analyses")
    ap.add_argument("--max-minutes", type=float, default=24.0, help="stop measuring after this many minutes")
    ap.add_argument("--quick-calibration", action="store_true", help="kerncast calibrate --quick")
    ap.add_argument("--build-dir", type=Path, help="harness builds (default: <out-root>/build/campaign/<id>)")
    ap.add_argument("--nvcc", help="nvcc to use")
    ap.add_argument("--no-report", action="store_true",
                    help="measure only: the report is left to a later --report-only run (a GPU lease short of time)")
    args = ap.parse_args(argv)
    if args.dry_run and args.out_root is None:
        ap.error("--dry-run writes its plan and report into --out-root DIR (not into the repository)")
    start = time.monotonic()
    deadline = start + 60.0 * args.max_minutes
    out = Outputs((args.out_root or ROOT).resolve(), args.gpu_id)
    out.folder.mkdir(parents=True, exist_ok=True)
    out.profile.parent.mkdir(parents=True, exist_ok=True)
    cases = all_cases(args.only, args.limit)
    if args.report_only:
        # no GPU needed: the models changed since the measurements, or the report is wanted on another machine
        measured = measured_keys(out.measurements)
        return 1 if report_step(out, [c for c in cases if c.key() in measured], args) else 0
    every = all_cases()
    problems = check_sources(cases)
    for p in problems:
        print(f"case source problem: {p}")
    cc = target_cc(args)
    too_new = [c for c in cases if c.min_cc > cc[0] * 10 + cc[1]]
    if too_new:
        print(f"{len(too_new)} cases need a newer GPU than sm_{cc[0]}{cc[1]} (tensor-core shapes): left out")
        cases = [c for c in cases if c not in too_new]
    plan = {"gpu_id": args.gpu_id, "dry_run": args.dry_run, "compute_capability": list(cc),
            "cases": len(cases), "distinct_kernels": len(distinct_kernels(cases)),
            "campaign_cases": len(every), "campaign_distinct_kernels": len(distinct_kernels(every)),
            "classes": sorted({c.klass for c in every}), "calibration": calibration_command(out, args),
            "outputs": {k: str(getattr(out, k)) for k in ("profile", "measurements", "report", "power_rows")},
            "rule": asdict(CAMPAIGN_RULE), "case_list": [asdict(c) for c in cases]}
    out.plan.write_text(json.dumps(plan, indent=1) + "\n", encoding="utf-8")
    print(f"{len(cases)} cases of {plan['distinct_kernels']} kernels (whole campaign: {len(every)} cases of "
          f"{plan['campaign_distinct_kernels']} kernels); plan in {out.plan}")
    # 1. calibration, after the SASS checks of its microbenchmarks for this GPU's architecture
    calibrated = profile_is_calibrated(out.profile)
    problems_sass = [] if calibrated else sass_problems(cc)
    if problems_sass:
        print("the calibration microbenchmarks do not hold what they measure on this architecture:\n  "
              + "\n  ".join(problems_sass))
        return 1
    if problems_sass == [] and not calibrated:
        print(f"SASS checks of the calibration microbenchmarks pass for sm_{cc[0]}{cc[1]}")
    if args.dry_run:
        exe = build_calibration_harness(cc, args.nvcc)
        print(f"calibration harness builds for sm_{cc[0]}{cc[1]} ({exe.name}); on the GPU: "
              + " ".join(plan["calibration"]))
    elif calibrated:
        print(f"{out.profile} is calibrated: calibration skipped")
    else:
        print("calibrating: " + " ".join(plan["calibration"]), flush=True)
        run = subprocess.run(plan["calibration"], cwd=ROOT, check=False, timeout=max(60.0, deadline - time.monotonic()))
        if run.returncode != 0:
            print(f"calibration failed (exit {run.returncode}); nothing measured")
            return run.returncode
    # 2. builds
    # build/ is ignored by git and kept between runs: a resumed campaign reuses its harnesses
    build_dir = args.build_dir or out.root / "build" / "campaign" / args.gpu_id
    built = build_all(cases if args.dry_run else still_to_measure(cases, out), build_dir, cc, args.nvcc, args.jobs)
    broken = {k: v for k, v in built.items() if not isinstance(v, Path)}
    for (file, kernel), why in broken.items():
        print(f"build failed: {file} {kernel}: {why}")
    # 3. measurements
    finished = True
    if not args.dry_run:
        try:
            measured, failed, finished = measure_all(cases, built, out, args.device, deadline)
        except NoGpuError as exc:
            print(f"no GPU: {exc}")
            return 2
        print(f"measured {measured} cases ({failed} failed) in {(time.monotonic() - start) / 60:.1f} min")
    missing = [] if args.no_report else report_step(out, cases, args)
    return 0 if finished and not problems and not broken and not missing else 1


def report_step(out: Outputs, cases: list[CampaignCase], args: argparse.Namespace) -> list[CampaignCase]:
    """4. every measured row predicted with the GPU's profile, REPORT.md and the power rows; the cases that got
    no prediction."""
    gpu = str(out.profile) if out.profile.is_file() else (args.base or "h100")
    predictions = predict(cases, gpu, args.jobs)
    missing = [c for c in cases if c.key() not in predictions]
    for c in missing:
        print(f"no prediction: {c.file} {c.kernel} <<<{c.grid}, {c.block}>>>")
    shown = Path(gpu).relative_to(out.root).as_posix() if Path(gpu).is_absolute() else gpu
    write_report(out, cases, predictions, args.dry_run, shown)
    rows = write_power_rows(out, cases)
    print(f"wrote {out.report} and {out.power_rows} ({rows} power rows); predictions with the {gpu} profile")
    return missing


if __name__ == "__main__":
    raise SystemExit(main())
