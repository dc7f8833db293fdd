"""Program features of the power model (thesis Table 5.4, PFEA Algorithms 9-10, Eq. 5.1-5.2), from PTX.

Two definitions of the instruction classes (docs/power-features.md sections 1.2 and 2):

* `dataset`: as the published CSVs were computed, so that the shipped models see what they were trained on:
  compute = add/sub/mul/mad/fma/div/and/sqrt/mov/setp/cvt/cvta (shifts, or/xor, selp, min/max and SFU ops are
  not counted); global = `ld.global`, `st.global` **and `ld.param`**; shared = `ld.shared` only (`st.shared`
  was never matched); control = `bra`, `bar`, `ret`.
* `thesis`: as the thesis text defines them: every ALU/SFU instruction is compute; global = loads, stores and
  atomics on `.global`; shared = loads and stores on `.shared`; control = branches, barriers, returns, exits.

Dynamic ("_sm") counts follow the dataset: per-thread count (each instruction weighted by its loops' trip counts,
PFEA's nLoop) x PFEA waves W = ceil(ceil(nB/nSM*nT)/2048). The compute latency of an instruction is the GPU
profile's latency row for its class (kerncast.analysis.isa).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from kerncast.analysis.compile import KernelResources
from kerncast.analysis.gpus import GpuProfile
from kerncast.analysis.isa import classify as isa_classify
from kerncast.analysis.ptx.model import Function, Module

_DATASET_COMP = {"add", "addc", "sub", "subc", "mul", "mul24", "mad", "mad24", "madc", "fma", "div", "and",
                 "sqrt", "mov", "setp", "cvt", "cvta"}
_THESIS_COMP_EXCLUDE = {"ld", "st", "atom", "red", "bra", "brx", "bar", "barrier", "ret", "exit", "trap", "call",
                        "membar", "fence", "prefetch", "ldu", "tex", "suld", "sust"}
_CONTROL = {"bra", "brx", "bar", "barrier", "ret"}
PFEA_THREADS_PER_WAVE = 2048  # docs/power-features.md s2: W = ceil(nTh_sched / 2048)
K20_ISSUE_DIVISOR = 65536  # docs/power-features.md s2: inst_issue_cycles = round(T * total_inst / 65536) (K20, M60)

#: Feature -> instruction class whose instructions make up the feature (for energy attribution).
_FEATURE_CLASS = {
    "comp": ("comp_inst_kernel", "comp_inst_sm", "avg_comp_lat", "l_comp_k", "f_comp", "fd_comp"),
    "glob": ("glob_inst_kernel", "glob_inst_sm", "avg_glob_lat", "cache_penalty", "l_glob_k", "f_glob", "fd_glob",
             "l_cache"),
    "gload": ("glob_load_sm", "l_gload"),
    "gstore": ("glob_store_sm", "l_gstore", "store_frac"),
    "shar": ("avg_shar_lat", "shar_inst_kernel", "shar_inst_sm", "f_shar", "fd_shar", "has_shared"),
    "misc": ("misc_inst_kernel", "misc_inst_sm", "l_misc_k", "f_misc"),
    "branch": ("branch", "l_branch"),
    "all": ("total_inst", "inst_issue_cycles", "l_iic", "l_work", "l_dyn_thread", "l_total_k"),
}
FEATURE_CLASS = {f: cls for cls, feats in _FEATURE_CLASS.items() for f in feats}


def classify(ins, definition: str = "dataset") -> str | None:
    """'comp', 'glob', 'shar', 'misc' or None for one instruction, in the given definition."""
    op, space = ins.opcode, ins.space
    if op in _CONTROL:
        return "misc"
    if definition == "dataset":
        if op in _DATASET_COMP:
            return "comp"
        if op in ("atom", "red") and "add" in ins.modifiers:
            return "comp"  # docs/power-features.md s1.2: atom/red .add matched the 'add' substring
        if op == "ld" and space in ("global", "param"):
            return "glob"
        if op == "st" and space == "global":
            return "glob"
        if op == "ld" and space == "shared":
            return "shar"
        return None
    if op in ("ld", "st", "atom", "red", "ldu"):
        return {"global": "glob", "shared": "shar"}.get(space or "")
    if op in ("exit",):
        return "misc"
    return None if op in _THESIS_COMP_EXCLUDE else "comp"


def _is_global_load(ins, definition: str) -> bool:
    return ins.opcode in ("ld", "ldu") and ins.space == "global"


def _is_global_store(ins) -> bool:
    return ins.opcode == "st" and ins.space == "global"


def feature_instructions(function, feature: str, definition: str = "dataset") -> list[int]:
    """Indices (into `function.body`) of the instructions that make up `feature`; [] for launch features."""
    cls = FEATURE_CLASS.get(feature)
    body = function.body
    if cls is None:
        return []
    if cls == "all":
        return [i for i, ins in enumerate(body) if classify(ins, definition) is not None]
    if cls == "gload":
        return [i for i, ins in enumerate(body) if _is_global_load(ins, definition)]
    if cls == "gstore":
        return [i for i, ins in enumerate(body) if _is_global_store(ins)]
    if cls == "branch":
        return [i for i, ins in enumerate(body) if ins.opcode in ("bra", "brx")]
    return [i for i, ins in enumerate(body) if classify(ins, definition) == cls]


@dataclass(frozen=True)
class LaunchShape:
    """The launch shape the features read: grid and block (an int or (x, y, z)) and dynamic shared bytes."""

    grid: int | tuple[int, ...]
    block: int | tuple[int, ...]
    dynamic_shared_bytes: int = 0


def _dims(v: int | float | Sequence[int]) -> int:
    if isinstance(v, int | float):
        return int(v)
    return int(math.prod(int(x) for x in v))


def extract_features(function: Function, module: Module, launch: LaunchShape, gpu: GpuProfile,
                     resources: KernelResources | None = None, definition: str = "dataset",
                     weights: Sequence[float] | None = None) -> dict[str, float]:
    """Table 5.4 features of `function` under `launch` on `gpu` (a GpuProfile), in the given definition.

    `resources` are ptxas's registers and shared bytes; without them registers are unknown (NaN).
    `weights[i]` is how often instruction `i` runs per thread (the trip counts of its loops, PFEA's nLoop);
    without them every instruction counts once. Static ("_kernel") counts never use them.
    """
    nb, nt = _dims(launch.grid), _dims(launch.block)
    total = nb * nt
    nsm = gpu.sm_count
    waves = max(1, math.ceil(math.ceil(nb / nsm * nt) / PFEA_THREADS_PER_WAVE))
    counts = {"comp": 0, "glob": 0, "shar": 0, "misc": 0}
    dyn = {"comp": 0.0, "glob": 0.0, "shar": 0.0, "misc": 0.0}
    comp_lat = 0.0
    gload = gstore = branch = 0.0
    latency = gpu.latency
    for i, ins in enumerate(function.body):
        cls = classify(ins, definition)
        if cls is None:
            continue
        w = float(weights[i]) if weights is not None else 1.0
        counts[cls] += 1
        dyn[cls] += w
        if cls == "comp":
            comp_lat += w * float(latency.get(isa_classify(ins).latency, math.nan))
        gload += w * _is_global_load(ins, definition)
        gstore += w * _is_global_store(ins)
        branch += w * (ins.opcode in ("bra", "brx"))
    glob_sm = (gload + gstore) * waves  # dataset: simulated global count excludes params (docs/power-features.md s2)
    total_inst = (dyn["comp"] + glob_sm / max(waves, 1) + dyn["shar"] + dyn["misc"]) * waves
    regs = resources.registers if resources is not None else None
    smem = resources.shared_bytes if resources is not None else None
    if smem is None:
        smem = function.static_shared_bytes
    smem = float(smem) + float(launch.dynamic_shared_bytes or 0)
    try:
        glat = float(gpu.global_latency(total))
    except Exception:  # a profile without the Table 3.3 model: unknown latency, imputed by the model
        glat = math.nan
    l2 = float(gpu.l2_bytes or 0)
    return {
        "grid_size": float(nb), "block_size": float(nt), "reg_thread": float(regs) if regs is not None else math.nan,
        "shmem_block": smem, "comp_inst_kernel": float(counts["comp"]),
        "avg_comp_lat": comp_lat / dyn["comp"] if dyn["comp"] else 0.0,
        "glob_inst_kernel": float(counts["glob"]), "avg_glob_lat": glat,
        "shar_inst_kernel": float(counts["shar"]), "avg_shar_lat": 36.0 if counts["shar"] else 0.0,  # s2: 36/inst
        "misc_inst_kernel": float(counts["misc"]), "branch": float(branch * waves),
        "glob_load_sm": float(gload * waves), "glob_store_sm": float(gstore * waves),
        "comp_inst_sm": float(dyn["comp"] * waves), "glob_inst_sm": float(glob_sm),
        "shar_inst_sm": float(dyn["shar"] * waves), "misc_inst_sm": float(dyn["misc"] * waves),
        "total_inst": float(total_inst), "inst_issue_cycles": float(round(total * total_inst / K20_ISSUE_DIVISOR)),
        "cache_penalty": (total * glob_sm * glat * 4 / (waves * l2)) if l2 > 0 else math.nan,
    }
