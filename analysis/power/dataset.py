"""Load and clean the measured power datasets (`<repo>/data/power/*.csv`, described in its README).

Two CSV layouts exist: the thesis layout (K20 larger/smaller, M60, V100; target `Power`) and the PowerQuant
Dataset-1 layout (target `Avg`). Both are read with the standard `csv` module into float columns keyed by one
canonical name, because the models must see features named and defined the same way whichever file they came
from (definitions: docs/power-features.md).

Cleaning (data/power/README.md says why each step is needed):

* rows without a benchmark name or a numeric power are dropped (K20 larger has 186 trailing blank rows);
* spreadsheet errors (`#VALUE!`, `#DIV/0!`), blanks, `NaN` and strings pasted into numeric cells become NaN;
* PowerQuant's `inst_issue_cycles` overflowed int32: negative values get 2**32 added;
* `*_sim` columns are renamed `*_sm` (the same quantity);
* exact duplicate rows and the V100 saxpy rows whose labels were copied from M60 are flagged, and only the
  cleaned rows (`PowerDataset.clean`) train and validate the default model. The thesis model keeps the rows as
  published, so that its scores stay comparable with the thesis.

Which GPU a file belongs to comes from `analysis/data/power_datasets.toml`; that GPU's facts (SMs, limits, TDP,
idle power) come from its profile in `analysis/gpus/`, the one place Kerncast writes GPU facts.
"""

from __future__ import annotations

import csv
import math
import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
from kerncast.analysis.gpus import ProfileError, load_profile

#: The 15 features of the thesis model, in the order of the thesis notebooks (docs/power-features.md).
THESIS_FEATURES: tuple[str, ...] = (
    "block_size", "reg_thread", "shmem_block", "comp_inst_kernel", "avg_comp_lat", "glob_inst_kernel",
    "avg_glob_lat", "avg_shar_lat", "misc_inst_kernel", "branch", "glob_load_sm", "glob_store_sm",
    "inst_issue_cycles", "occupancy", "cache_penalty",
)
#: PowerQuant Dataset-1 has no occupancy and no shmem_block column (data/power/README.md).
POWERQUANT_THESIS_FEATURES: tuple[str, ...] = tuple(
    f for f in THESIS_FEATURES if f not in ("occupancy", "shmem_block")
)

#: PowerQuant column -> canonical name.
_POWERQUANT_RENAME = {
    "KernelName": "kernel", "GridSize": "grid_size", "BlockSize": "block_size", "Comp_inst_kernel": "comp_inst_kernel",
    "Regs": "reg_thread", "Loops": "loops", "Avg": "power", "Time": "time_ns",
}
_THESIS_RENAME = {"Benchmark": "benchmark", "Kernel Name": "kernel", "Power": "power"}

#: Benchmark aliases merged before grouping (data/power/README.md, cleaning):
#: the same program under different spellings on different GPUs must fall in the same group, or grouped CV leaks.
_ALIASES = {
    "breadthfirstsearch": "bfs", "bfs2": "bfs", "cdpsmplequicksort": "cdpsimplequicksort",
    "fastwalshtransform": "fastwalsh", "nw1": "nw", "nw2": "nw", "quasirandom": "qrng",
    "binomopt": "binomialoptions", "matrixmul": "matrixmultiplication", "convtr": "convolutiontexture",
    "convolutiontext": "convolutiontexture", "fdtd3d": "fdtd", "stereodisparity": "stereo",
    "vectoraddition": "vecadd", "vecadd3": "vecadd", "vecadd90": "vecadd",
    "convolutionseperable": "convolutionseparable",
}

_MISSING = {"", "nan", "#value!", "#div/0!", "#n/a", "inf", "-inf"}
INT32_WRAP = 2.0**32  # int32 overflow of PowerQuant's inst_issue_cycles (data/power/README.md)


class DatasetError(Exception):
    """A dataset directory or CSV file that cannot be used; the message says why."""


def default_data_dir() -> Path:
    """`<repo>/data/power`: the datasets the repository carries (not part of an installed wheel)."""
    return Path(__file__).resolve().parents[2] / "data" / "power"


@cache
def descriptors() -> dict[str, dict]:
    """Per-dataset descriptors keyed by file stem: layout, pooling, and the GPU's SMs, limits, TDP and idle power.

    GPU facts come from the GPU's profile (`analysis/gpus/<gpu>.toml`); only the unidentified PowerQuant boards
    carry guessed facts in `power_datasets.toml` itself (their idle power is then the file's lowest measurement).
    """
    text = resources.files("kerncast.analysis").joinpath("data/power_datasets.toml").read_text()
    out: dict[str, dict] = {}
    for stem, entry in tomllib.loads(text).items():
        d = {k: v for k, v in entry.items() if k != "board"}
        board = entry.get("board")
        if board is None:
            try:
                gpu = load_profile(entry["gpu"])
            except ProfileError as exc:
                raise DatasetError(f"dataset '{stem}': no GPU profile '{entry['gpu']}' ({exc})") from None
            d.update(gpu_descriptor(gpu))
        else:
            d.update({k: v for k, v in board.items() if k != "source"}, source=board["source"])
        out[stem] = d
    return out


def gpu_descriptor(gpu) -> dict:
    """The GPU facts the power features and the pooled target need, from a `GpuProfile`."""
    lim = gpu.limits
    return {"sm_count": gpu.sm_count, "max_threads_per_sm": lim.max_threads_per_sm,
            "max_blocks_per_sm": lim.max_blocks_per_sm, "regs_per_sm": lim.regs_per_sm,
            "smem_per_sm": lim.shared_per_sm, "tdp_w": float(gpu.tdp_w), "idle_w": float(gpu.idle_w),
            "source": f"GPU profile {gpu.id}"}


def normalise_benchmark(name: str) -> str:
    """Fold case and punctuation and merge known aliases, so each program is one group."""
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    return _ALIASES.get(key, key)


def _to_float(text: str) -> float:
    s = text.strip()
    if s.lower() in _MISSING:
        return math.nan
    try:
        return float(s)
    except ValueError:
        return math.nan


@dataclass
class PowerDataset:
    """One measured dataset: float feature columns, measured power (W) and the benchmark group of every row."""

    name: str
    descriptor: dict
    columns: dict[str, np.ndarray]
    power: np.ndarray
    benchmark: list[str]
    kernel: list[str]
    group: np.ndarray
    clean: np.ndarray  # rows for the default model (duplicates and copied labels removed)
    notes: list[str] = field(default_factory=list)

    @property
    def format(self) -> str:
        return str(self.descriptor["format"])

    @property
    def rows(self) -> int:
        return int(self.power.shape[0])

    def thesis_features(self) -> tuple[str, ...]:
        """The thesis model's feature columns available in this dataset."""
        return THESIS_FEATURES if self.format == "thesis" else POWERQUANT_THESIS_FEATURES

    def matrix(self, names: tuple[str, ...] | list[str]) -> np.ndarray:
        """Columns `names` as an (n, k) float array; a column the file lacks is all NaN."""
        n = self.rows
        return np.column_stack([self.columns.get(c, np.full(n, np.nan)) for c in names]) if names else np.empty((n, 0))

    def subset(self, mask: np.ndarray) -> PowerDataset:
        """The rows where `mask` is true, as a new dataset."""
        idx = np.flatnonzero(mask)
        return PowerDataset(
            self.name, self.descriptor, {k: v[idx] for k, v in self.columns.items()}, self.power[idx],
            [self.benchmark[i] for i in idx], [self.kernel[i] for i in idx], self.group[idx], self.clean[idx],
            list(self.notes),
        )


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            rows = [r for r in reader]
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: not a readable CSV file ({exc})") from None
    if not header:
        raise DatasetError(f"{path}: empty file, expected a header row")
    return [h.strip() for h in header], rows


def load_dataset(path: Path | str) -> PowerDataset:
    """Load and clean one CSV; its file stem selects the GPU descriptor."""
    path = Path(path)
    stem = path.stem
    desc = descriptors().get(stem)
    if desc is None:
        raise DatasetError(f"{path}: unknown dataset '{stem}' (known: {', '.join(sorted(descriptors()))})")
    header, raw = _read_csv(path)
    rename = _THESIS_RENAME if desc["format"] == "thesis" else _POWERQUANT_RENAME
    names = [rename.get(h, re.sub(r"_sim$", "_sm", h)) for h in header]
    need = {"kernel", "grid_size", "block_size", "power"} | ({"benchmark"} if desc["format"] == "thesis" else set())
    missing = sorted(need - set(names))
    if missing:
        raise DatasetError(f"{path}: missing column(s) {', '.join(missing)}")
    pos = {}
    for i, n in enumerate(names):
        pos.setdefault(n, i)  # first occurrence wins (PowerQuant repeats block_size)
    text_cols = {"benchmark", "kernel", "C/M", ""}
    keep, seen, dup = [], set(), []
    for r in raw:
        r = r + [""] * (len(names) - len(r))
        bench = r[pos["benchmark"]].strip() if "benchmark" in pos else r[pos["kernel"]].strip()
        if not bench or math.isnan(_to_float(r[pos["power"]])):
            continue
        key = tuple(c.strip() for j, c in enumerate(r) if names[j] not in ("Sr No.",))
        dup.append(key in seen)
        seen.add(key)
        keep.append(r)
    if not keep:
        raise DatasetError(f"{path}: no row has both a benchmark name and a numeric power value")
    cols: dict[str, np.ndarray] = {}
    for n, i in pos.items():
        if n in text_cols or n == "Sr No.":
            continue
        cols[n] = np.array([_to_float(r[i]) for r in keep], dtype=float)
    notes: list[str] = []
    if "inst_issue_cycles" in cols:
        neg = cols["inst_issue_cycles"] < 0
        if neg.any():
            cols["inst_issue_cycles"][neg] += INT32_WRAP
            notes.append(f"inst_issue_cycles: {int(neg.sum())} int32-overflowed values unwrapped")
    if desc["format"] == "powerquant":
        # "NaN" avg_shar_lat means the kernel uses no shared memory (data/power/README.md).
        cols["avg_shar_lat"] = np.nan_to_num(cols.get("avg_shar_lat", np.zeros(len(keep))), nan=0.0)
        cols.setdefault("shmem_block", np.zeros(len(keep)))
    kernel = [r[pos["kernel"]].strip() for r in keep]
    bench = [r[pos["benchmark"]].strip() for r in keep] if "benchmark" in pos else list(kernel)
    group = np.array([normalise_benchmark(b) for b in bench])
    power = cols.pop("power")
    clean = ~np.array(dup)
    if any(dup):
        notes.append(f"{int(np.sum(dup))} exact duplicate rows excluded from the default model")
    copied = desc.get("copied_labels")
    if copied:
        cp = group == normalise_benchmark(copied)
        clean &= ~cp
        notes.append(f"{int(cp.sum())} '{copied}' rows with labels copied from another GPU "
                     "excluded from the default model")
    # floor_w: the lowest power measured while a kernel of this file ran. The pooled model is normalised by it
    # (a measured per-GPU constant of the data, docs/power-model.md); boards without a profile take it as idle.
    desc = dict(desc, name=stem, floor_w=float(np.min(power)))
    desc.setdefault("idle_w", desc["floor_w"])
    return PowerDataset(stem, desc, cols, power, bench, kernel, group, clean, notes)


def load_all(data_dir: Path | str | None = None) -> dict[str, PowerDataset]:
    """Every known dataset found in `data_dir` (default: `default_data_dir()`), keyed by file stem."""
    d = Path(data_dir) if data_dir is not None else default_data_dir()
    if not d.is_dir():
        raise DatasetError(f"dataset directory not found: {d} (pass --data DIR)")
    files = sorted(p for p in d.glob("*.csv") if p.stem in descriptors())
    if not files:
        raise DatasetError(f"no known power dataset (*.csv) in {d}; expected e.g. {', '.join(sorted(descriptors()))}")
    return {p.stem: load_dataset(p) for p in files}
