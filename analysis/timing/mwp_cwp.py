"""Hong & Kim's MWP-CWP analytical model (ISCA 2009): Eqs. 5-28, with its classification.

`mwp_cwp(params)` is the paper's model on the paper's parameters (Table 1), nothing more, so it can be checked
against the paper's worked example (Table 2). `mwp_cwp_params(...)` derives those parameters for a kernel on
one of Kerncast's GPU profiles. Choices where the paper is ambiguous:

* **Case order (Eqs. 22-24).** As printed: "not enough warps" (MWP == CWP == N) first, then Eq. 23 when
  CWP >= MWP *or* Comp_cycles > Mem_cycles, else Eq. 24. The class reported is the paper's insight (section
  7): "too few warps" for Eq. 22, "memory-bound" when CWP >= MWP, "compute-bound" when MWP > CWP, whichever
  equation the Comp > Mem clause routed the cycles through.
* **#Rep (Eq. 21)** is left unrounded, as in the paper's example (80 / (16 x 5) = 1).
* **No memory instruction.** Eqs. 2 and 23 divide by #Mem_insts; a kernel with none is compute-bound and runs
  Comp_cycles x N per repetition (Eq. 24 with Mem_L = 0).
* **Modern GPUs (mwp_cwp_params).** Issue_cycles, the SM cycles one warp instruction takes (4 on Tesla: 32
  threads on 8 SPs), is ``max(1, warp / (SP / schedulers)) / schedulers``: each scheduler issues one warp
  instruction per cycle at most, onto its share of the SP lanes. Mem_LD is the profile's global latency for
  the launch (thesis Table 3.3 model); departure delays are Hong & Kim's Table 6 (data/timing.toml);
  #Active_blocks_per_SM is the occupancy, capped by the blocks an SM gets (ceil(#Blocks / #Active_SMs));
  #Active_SMs = min(#Blocks, #SM).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from kerncast.analysis.timing.constants import timing_constants
from kerncast.analysis.timing.counts import DynamicCounts

MEMORY_BOUND = "memory-bound"
COMPUTE_BOUND = "compute-bound"
TOO_FEW_WARPS = "too few warps"


@dataclass(slots=True)
class MwpCwpParams:
    """Table 1 of the paper. Instruction counts are dynamic, per thread; frequencies in Hz, bandwidth in B/s."""

    mem_ld: float
    departure_del_uncoal: float
    departure_del_coal: float
    threads_per_block: int
    blocks: int
    active_blocks_per_sm: float
    active_sms: int
    comp_insts: float
    uncoal_mem_insts: float
    coal_mem_insts: float
    synch_insts: float
    uncoal_per_mw: float
    load_bytes_per_warp: float
    freq_hz: float
    mem_bandwidth_bps: float
    issue_cycles: float = 4.0
    threads_per_warp: int = 32


@dataclass(slots=True)
class MwpCwpResult:
    """The model's intermediate values and result, each with the paper's name and the equation that defines it;
    cycles are SM cycles, `us` needs the clock."""

    mem_l: float  # Mem_L (Eq. 12): memory latency averaged over coalesced and uncoalesced loads, cycles
    departure_delay: float  # Departure_delay (Eq. 15): cycles between two warps' memory requests
    mwp_without_bw_full: float  # MWP_Without_BW_full (Eq. 16): Mem_L / Departure_delay
    mwp_peak_bw: float  # MWP_peak_BW (Eq. 6): the warps that saturate the DRAM bandwidth
    mwp: float  # MWP (Eqs. 5 and 17), or the caller's override
    mwp_limit: str  # which term of Eq. 5 limits MWP: "departure delay", "bandwidth" or "warps"
    cwp: float  # CWP (Eqs. 8-9)
    n: float  # N (Eq. 20): active warps per SM
    comp_cycles: float  # Comp_cycles (Eq. 19)
    mem_cycles: float  # Mem_cycles (Eq. 18)
    rep: float  # #Rep (Eq. 21): waves of blocks, unrounded
    exec_cycles: float  # Exec_cycles_app (Eq. 22, 23 or 24)
    synch_cycles: float  # Synch_cost (Eq. 26)
    total_cycles: float  # Exec_cycles_with_synch (Eq. 28)
    equation: int  # 22, 23 or 24
    cls: str  # "memory-bound", "compute-bound" or "too few warps" (section 7)
    us: float | None = None  # total_cycles at the profile's clock, microseconds

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def mwp_cwp(p: MwpCwpParams, mwp_override: float | None = None) -> MwpCwpResult:
    """Evaluate Eqs. 5-28. `mwp_override` replaces the computed MWP (to follow a paper's rounded MWP)."""
    nu, nc = p.uncoal_mem_insts, p.coal_mem_insts
    nm = nu + nc
    n = p.active_blocks_per_sm * p.threads_per_block / p.threads_per_warp  # Eq. 20
    l_uncoal = p.mem_ld + (p.uncoal_per_mw - 1) * p.departure_del_uncoal  # Eq. 10
    l_coal = p.mem_ld  # Eq. 11
    wu, wc = (nu / nm, nc / nm) if nm else (0.0, 1.0)  # Eqs. 13-14
    mem_l = l_uncoal * wu + l_coal * wc  # Eq. 12
    dep = p.departure_del_uncoal * p.uncoal_per_mw * wu + p.departure_del_coal * wc  # Eq. 15
    mwp_full = mem_l / dep if dep > 0 else math.inf  # Eq. 16
    bw_per_warp = p.freq_hz * p.load_bytes_per_warp / mem_l if mem_l > 0 else 0.0  # Eq. 7
    mwp_bw = p.mem_bandwidth_bps / (bw_per_warp * p.active_sms) if bw_per_warp > 0 else math.inf  # Eq. 6
    terms = {"departure delay": mwp_full, "bandwidth": mwp_bw, "warps": n}
    mwp = min(terms.values())  # Eqs. 5 and 17
    limit = min(terms, key=lambda k: terms[k])
    if mwp_override is not None:
        mwp = mwp_override
    comp = p.issue_cycles * (p.comp_insts + nm)  # Eq. 19
    mem = l_uncoal * nu + l_coal * nc  # Eq. 18
    cwp = min((mem + comp) / comp, n) if comp > 0 else n  # Eqs. 8-9
    rep = p.blocks / (p.active_blocks_per_sm * p.active_sms)  # Eq. 21
    if nm == 0:
        exec_cycles, eq, cls = comp * n * rep, 24, COMPUTE_BOUND
    elif mwp == n and cwp == n:
        exec_cycles = (mem + comp + comp / nm * (mwp - 1)) * rep  # Eq. 22
        eq, cls = 22, TOO_FEW_WARPS
    elif cwp >= mwp or comp > mem:
        exec_cycles = (mem * n / mwp + comp / nm * (mwp - 1)) * rep  # Eq. 23
        eq, cls = 23, MEMORY_BOUND if cwp >= mwp else COMPUTE_BOUND
    else:
        exec_cycles = (mem_l + comp * n) * rep  # Eq. 24
        eq, cls = 24, COMPUTE_BOUND
    npwb = min(mwp, p.threads_per_block / p.threads_per_warp)  # Eq. 27
    synch = dep * (npwb - 1) * p.synch_insts * p.active_blocks_per_sm * rep if p.synch_insts else 0.0  # Eq. 26
    total = exec_cycles + synch  # Eq. 28
    return MwpCwpResult(mem_l, dep, mwp_full, mwp_bw, mwp, limit, cwp, n, comp, mem, rep, exec_cycles, synch,
                        total, eq, cls, total / p.freq_hz * 1e6 if p.freq_hz else None)


def issue_cycles(profile: Any) -> float:
    """SM cycles per warp instruction on a profile's GPU (see the module docstring)."""
    sched = max(1, int(profile.units["warp_schedulers"]))
    lanes = max(1, int(profile.units["SP"]) // sched)
    return max(1.0, profile.warp_size / lanes) / sched


def departure_scale(profile: Any) -> float:
    """Hong & Kim's departure delays (measured on a GTX280) scaled to a profile's GPU by DRAM bytes per SM per
    cycle: a transaction leaves the SM when the SM's share of the bandwidth has moved the previous one."""
    const = timing_constants()["mwp_cwp"]
    ref = const["reference_bandwidth_gbs"] / (const["reference_sm_count"] * const["reference_clock_mhz"])
    gpu = profile.mem_bandwidth_gbs / (profile.sm_count * profile.core_clock_mhz)
    return ref / gpu if gpu > 0 else 1.0


def mwp_cwp_params(profile: Any, counts: DynamicCounts, *, blocks: int, threads_per_block: int,
                   active_blocks_per_sm: int, uncoalesced_fraction: float = 0.0,
                   uncoal_per_mw: float | None = None) -> MwpCwpParams:
    """Hong & Kim's parameters for one kernel launch on a Kerncast GPU profile."""
    const = timing_constants()["mwp_cwp"]
    active_sms = max(1, min(blocks, profile.sm_count))
    per_sm = max(1, math.ceil(blocks / active_sms))
    active = max(1, min(active_blocks_per_sm, per_sm))
    mem = counts.global_insts
    avg_bytes = counts.global_bytes / mem if mem else float(profile.access_size)
    total_threads = blocks * threads_per_block
    scale = departure_scale(profile)
    return MwpCwpParams(
        mem_ld=float(profile.global_latency(total_threads)),
        departure_del_uncoal=float(const["departure_del_uncoal"]) * scale,
        departure_del_coal=float(const["departure_del_coal"]) * scale,
        threads_per_block=threads_per_block, blocks=blocks, active_blocks_per_sm=active, active_sms=active_sms,
        comp_insts=counts.compute, uncoal_mem_insts=mem * uncoalesced_fraction,
        coal_mem_insts=mem * (1.0 - uncoalesced_fraction), synch_insts=counts.sync_insts,
        uncoal_per_mw=float(uncoal_per_mw if uncoal_per_mw is not None else const["uncoal_per_mw_default"]),
        load_bytes_per_warp=max(1.0, avg_bytes) * profile.warp_size,
        freq_hz=profile.core_clock_mhz * 1e6, mem_bandwidth_bps=profile.mem_bandwidth_gbs * 1e9,
        issue_cycles=issue_cycles(profile), threads_per_warp=profile.warp_size,
    )
