"""Engineered features of the default power model (docs/power-model.md s1.1, "ENG").

They are row-wise transforms of the Table 5.4 features (dataset definition) plus the launch geometry on the
target GPU, so the same function serves training (columns of a CSV) and prediction (one kernel's features):
a model is only valid when fed features computed exactly as in training.

Launch geometry carries most of the signal that transfers to unseen kernels (docs/power-model.md s0
and 9.4): active SMs, warp-slot fill of the first wave, waves and occupancy. Counts enter as log1p, mixes as
fractions, so that no single odd kernel dominates a linear term.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from importlib import resources

import numpy as np

WARP = 32  # threads per warp on every NVIDIA GPU (CUDA Programming Guide)
REG_ALLOC_UNIT = 256  # registers are allocated per warp in units of 256 (CUDA Occupancy Calculator, CC >= 3.0)
#: PFEA wave divisor: threads per SM in the dataset's W = ceil(ceil(nB/nSM*nT)/2048) (docs/power-features.md s2)
PFEA_THREADS_PER_WAVE = 2048

def _feature_table() -> dict[str, dict[str, str]]:
    """The feature groups of data/power_features.toml, each {name: label} in training order (TOML keeps order)."""
    text = resources.files("kerncast.analysis").joinpath("data/power_features.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    return {group: dict(data[group]) for group in ("launch", "static", "dynamic", "descriptor")}


_TABLE = _feature_table()
LAUNCH: tuple[str, ...] = tuple(_TABLE["launch"])
STATIC: tuple[str, ...] = tuple(_TABLE["static"])
DYN: tuple[str, ...] = tuple(_TABLE["dynamic"])
ENG: tuple[str, ...] = LAUNCH + STATIC + DYN
#: GPU descriptors appended for models pooled over several GPUs (docs/power-model.md s6).
DESC: tuple[str, ...] = tuple(_TABLE["descriptor"])
#: Human-readable names, for hovers and explanations.
NAMES: dict[str, str] = {name: label for group in _TABLE.values() for name, label in group.items()}


def _zero_nan(a: np.ndarray) -> np.ndarray:
    """`np.nan_to_num(a, nan=0.0)`, its checks skipped for the usual all-finite column (a copy either way):
    `nan_to_num` alone costs more than the rest of a one-kernel feature row."""
    a = np.asarray(a, dtype=float)
    return a.copy() if np.isfinite(a).all() else np.nan_to_num(a, nan=0.0)


def _col(cols: Mapping[str, np.ndarray], name: str, n: int, fill: float = np.nan) -> np.ndarray:
    v = cols.get(name)
    return np.full(n, fill, dtype=float) if v is None else np.asarray(v, dtype=float)


def blocks_per_sm(block: np.ndarray, regs: np.ndarray, smem: np.ndarray, gpu: Mapping) -> np.ndarray:
    """Resident blocks per SM allowed by threads, blocks, registers and shared memory (occupancy-calculator rules)."""
    warps = np.ceil(np.maximum(block, 1) / WARP)
    by_thr = np.floor(gpu["max_threads_per_sm"] / (warps * WARP))
    regs = _zero_nan(regs)
    regs_per_warp = np.ceil(regs * WARP / REG_ALLOC_UNIT) * REG_ALLOC_UNIT
    with np.errstate(divide="ignore", invalid="ignore"):
        by_reg = np.where(regs_per_warp > 0, np.floor(gpu["regs_per_sm"] / (regs_per_warp * warps)), np.inf)
        smem = _zero_nan(smem)
        by_smem = np.where(smem > 0, np.floor(gpu["smem_per_sm"] / smem), np.inf)
    return np.maximum(np.minimum.reduce([by_thr, np.full_like(by_thr, gpu["max_blocks_per_sm"]), by_reg, by_smem]), 1)


def engineer(cols: Mapping[str, np.ndarray], gpu: Mapping, fmt: str = "thesis") -> dict[str, np.ndarray]:
    """ENG features from Table 5.4 columns (dataset definition) and a GPU descriptor (sm_count, limits).

    `fmt="powerquant"` covers PowerQuant's Dataset-1, which has no simulated totals: static fractions stand in
    for the dynamic ones and `loops` scales the per-thread count (docs/power-model.md s1.1).
    """
    grid = _col(cols, "grid_size", 0) if "grid_size" in cols else None
    if grid is None:
        raise KeyError("grid_size")
    n = grid.shape[0]
    grid = np.maximum(grid, 1.0)
    block = np.maximum(_col(cols, "block_size", n), 1.0)
    regs = _col(cols, "reg_thread", n, 0.0)
    smem = _zero_nan(_col(cols, "shmem_block", n, 0.0))
    nsm = float(gpu["sm_count"])
    max_thr = float(gpu["max_threads_per_sm"])
    total = grid * block
    bps = blocks_per_sm(block, regs, smem, gpu)
    warps_blk = np.ceil(block / WARP)
    max_warps = max_thr / WARP
    occ_calc = np.minimum(bps * warps_blk / max_warps, 1.0)
    occ = _col(cols, "occupancy", n)
    occ = np.where(np.isfinite(occ) & (occ > 0), occ, occ_calc)
    f: dict[str, np.ndarray] = {
        "lg": np.log2(grid), "lb": np.log2(block), "lT": np.log2(total),
        "sm_share": np.minimum(grid, nsm) / nsm, "occ": occ,
        "thread_fill": np.minimum(total, nsm * max_thr) / (nsm * max_thr),
        "util": np.minimum(grid, nsm * bps) * warps_blk / (nsm * max_warps),
        "l_waves": np.log2(np.ceil(grid / (nsm * bps))),
    }
    ck = _col(cols, "comp_inst_kernel", n, 0.0)
    gk = _col(cols, "glob_inst_kernel", n, 0.0)
    mk = _col(cols, "misc_inst_kernel", n, 0.0)
    sk = _col(cols, "shar_inst_kernel", n, 0.0)
    shar_lat = _zero_nan(_col(cols, "avg_shar_lat", n, 0.0))
    if fmt == "powerquant":
        sk = np.where(shar_lat > 0, 1.0, 0.0)  # no static shared count in PowerQuant: presence only
    tot_k = np.nansum(np.column_stack([ck, gk, mk, sk]), axis=1)
    den_k = np.where(tot_k > 0, tot_k, np.nan)
    f.update({
        "l_comp_k": np.log1p(ck), "l_glob_k": np.log1p(gk), "l_misc_k": np.log1p(mk), "l_total_k": np.log1p(tot_k),
        "f_comp": ck / den_k, "f_glob": gk / den_k, "f_shar": sk / den_k, "f_misc": mk / den_k,
        "avg_comp_lat": _col(cols, "avg_comp_lat", n), "has_shared": (shar_lat > 0).astype(float),
        "regs": regs, "l_shmem": np.log1p(smem),
    })
    gl = _col(cols, "glob_load_sm", n)
    gs = _col(cols, "glob_store_sm", n)
    iic = _col(cols, "inst_issue_cycles", n)
    with np.errstate(divide="ignore", invalid="ignore"):
        store_frac = np.where(gl + gs > 0, gs / (gl + gs), 0.0)
    f.update({
        "l_branch": np.log1p(np.maximum(_col(cols, "branch", n), 0)), "l_gload": np.log1p(np.maximum(gl, 0)),
        "l_gstore": np.log1p(np.maximum(gs, 0)), "l_iic": np.log1p(np.maximum(iic, 0)),
        "l_cache": np.log1p(np.maximum(_col(cols, "cache_penalty", n), 0)), "store_frac": store_frac,
    })
    if fmt == "powerquant":
        loops = np.maximum(_col(cols, "loops", n, 1.0), 1.0)
        f.update({"fd_glob": f["f_glob"], "fd_comp": f["f_comp"], "fd_shar": f["f_shar"],
                  "l_dyn_thread": np.log1p(tot_k * loops), "l_work": np.log1p(np.maximum(iic, 0) * 65536.0)})
    else:
        ti = _col(cols, "total_inst", n)
        den = np.where(ti > 0, ti, np.nan)
        # W = PFEA wave count, the divisor the dataset's simulated counts were multiplied by (docs/power-features.md s2)
        waves = np.maximum(np.ceil(np.ceil(grid / nsm * block) / PFEA_THREADS_PER_WAVE), 1.0)
        f.update({
            "fd_glob": _col(cols, "glob_inst_sm", n) / den, "fd_comp": _col(cols, "comp_inst_sm", n) / den,
            "fd_shar": _col(cols, "shar_inst_sm", n) / den, "l_dyn_thread": np.log1p(np.maximum(ti, 0) / waves),
            "l_work": np.log1p(np.maximum(ti, 0) * total),
        })
    return f


def descriptor_features(n: int, sm_count: float, tdp_w: float, idle_w: float) -> dict[str, np.ndarray]:
    """GPU descriptors as constant columns, for pooled models."""
    return {"d_sm": np.full(n, float(sm_count)), "d_tdp": np.full(n, float(tdp_w)), "d_idle": np.full(n, float(idle_w))}
