"""A best/worst time range from the boat hull model (Nugteren & Corporaal), made static.

The boat hull predicts ``t = max(c, m)`` from a compute line and a memory line, with "floors" (slower lines)
where an optimisation cannot be assumed, and reports the range between the best and the worst line:

* compute: ``c0 = w (f m + o) / P_compute``. The paper takes ``f m + o`` from an algorithm class; Kerncast
  reads it from the PTX: the per-thread dynamic count of compute instructions, an FMA counted twice because
  the vendor peak ``P_compute`` counts it twice. The non-FMA floor ``c1`` (twice the time, as a time rather
  than the paper's performance form) applies when the kernel has any compute instruction that is not an FMA.
* memory: ``m0 = c / P_coalesced + u / P_uncoalesced`` over the bytes the threads move to or from global
  memory, split into coalesced (c) and uncoalesced (u) by the memory analysis; the scattered-access floor
  ``m1 = d / P_uncoalesced`` applies to the worst case whenever coalescing is not proven. Every global access
  is counted as off-chip traffic (the paper counts compulsory traffic only; PTX does not say what the caches
  catch), so the memory line is on the slow side for kernels that reuse data through L1/L2.
* double precision: FP64 instructions run on the SM's double-precision units, not its SP lanes, at
  ``P_dp`` = DP units x SMs x clock x 2 (1/2 of the FP32 rate on an H100 or V100, 1/32 on a GTX 1050); their
  line stands beside the SP one (the other compute), and the compute line is the longer of the two.
* integer pipes (Volta on, `timing/datapaths.py`): integer instructions run on the ALU and the FMA pipe beside
  the FP32 lanes, so they leave the SP line for their own, their instructions over the SP and ALU lanes
  (``P_pipes``), and the logic ptxas merges into a neighbour is in neither line.
* tensor cores: a matrix instruction (`mma`, `wmma.mma`, `wgmma`) is a warp's whole product, charged its
  FLOPs at the profile's dense tensor-core rate for its input type (``[tensor]``: FLOPs per SM per clock x SMs
  x clock); this line too stands beside the SP one, and a GPU with no rate for the type runs the FLOPs on
  the SP lanes. Its worst case is the same line: the vendor peak is the only rate the profiles hold.
* ``P_compute`` = SP lanes x SMs x clock x 2 and ``P_coalesced`` = the profile's peak DRAM bandwidth (vendor
  figures, where the paper measured bandwidth); ``P_uncoalesced`` = ``P_coalesced`` / the paper's measured
  coalesced-to-scattered ratio (data/timing.toml).

Made to bracket a measurement, as a range must:

* best: the compulsory traffic (the distinct bytes the launch touches, from the footprint, and the requests of
  addresses that have none (gathers) in full, less what a warm L2 already holds: none of it when it all fits;
  the DRAM traffic the kerncast model counts) at the peak bandwidth, or the compute line at the peak rate,
  whichever is longer;
* a load/store line beside the compute line: the shared and global instructions at the SMs' load/store lanes
  (best: one pass each of the fewest instructions that move the thread's bytes, 16 per lane, because ptxas
  merges a thread's adjacent scalar accesses into vector ones of up to 128 bits, so the PTX count is an upper
  bound of the SASS one; worst: each PTX instruction times the replays of bank conflicts and scattered sectors);
* worst: the bytes requested with no reuse at all (every sector a request moves comes from DRAM, at the
  achievable rather than the peak bandwidth, scattered at `P_uncoalesced` unless coalescing is proven), or
  the non-FMA compute line, plus what no roofline models but every launch pays: the launch's fixed latency,
  its block dispatch (the longest line when a kernel does next to nothing), one wave's dependence chain left
  unhidden, and whole blocks per SM (the busiest SM runs
  ``ceil(blocks / SMs)`` of them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kerncast.analysis.matrix_ops import tensor_cycles, tensor_rate
from kerncast.analysis.ptx.model import WARP_THREADS
from kerncast.analysis.timing.constants import timing_constants
from kerncast.analysis.timing.counts import DynamicCounts
from kerncast.analysis.timing.datapaths import has_datapaths
from kerncast.analysis.timing.pipelined import achievable_bandwidth_gbs

#: the widest access one lane makes in one load/store instruction (128-bit vector loads and stores, PTX ISA
#: `.v4.b32` / `.v2.b64`)
_WIDEST_ACCESS_BYTES = 16.0


@dataclass(slots=True)
class RooflineInputs:
    """What the boat hull needs for one launch: work-units, per-thread ops and bytes, and the peak rates."""

    work_units: float  # w: threads launched
    ops_per_thread: float  # f m + o, FMA counted twice (on the SP lanes)
    bytes_per_thread: float  # global bytes moved per thread
    p_compute: float  # ops/s
    p_coalesced: float  # bytes/s
    p_uncoalesced: float  # bytes/s
    uncoalesced_fraction: float = 0.0
    coalescing_known: bool = False
    non_fma: bool = True
    non_fma_factor: float = 2.0
    compulsory_bytes: float | None = None  # distinct bytes of the launch (None: the requested bytes)
    requested_bytes: float | None = None  # sector bytes requested with no reuse (None: threads x bytes)
    p_achievable: float | None = None  # bytes/s a streaming kernel reaches (worst case; None: p_coalesced)
    lsu_ops_per_thread: float = 0.0  # shared + global load/store instructions
    lsu_bytes_per_thread: float | None = None  # their bytes (None: one instruction each in the best case too)
    p_lsu: float = 0.0  # load/store lanes x SMs x clock (1/s)
    lsu_replays: float = 1.0  # worst passes per load/store instruction
    quantization: float = 1.0  # busiest SM's blocks / the average SM's (whole blocks per SM)
    fixed_us: float = 0.0  # launch latency every kernel pays
    latency_us: float = 0.0  # every wave's dependence chain, none hidden behind another wave's (the worst case)
    dp_ops_per_thread: float = 0.0  # the FP64 part of f m + o, run on the double-precision units
    p_dp: float = 0.0  # DP units x SMs x clock x 2 (ops/s)
    dispatch_us: float = 0.0  # the launch's block dispatch, which no kernel finishes before
    tensor_s_per_thread: float = 0.0  # a thread's share of its matrix instructions at the tensor-core rate
    pipe_ops_per_thread: float = 0.0  # the part of f m + o that runs on the integer pipes (Volta on)
    pipe_insts_per_thread: float = 0.0  # ... and its instructions
    folded_ops_per_thread: float = 0.0  # the part of f m + o that ptxas merges away (no issue at all)
    p_pipes: float = 0.0  # SP and ALU lanes x SMs x clock (instructions/s); 0: no integer pipes


def roofline_range(inp: RooflineInputs) -> tuple[float, float]:
    """(best, worst) kernel time in microseconds."""
    on_sp = inp.ops_per_thread
    if inp.p_pipes > 0:  # integer work on its own pipes beside the SP lanes, and merged logic not at all
        on_sp -= inp.pipe_ops_per_thread + inp.folded_ops_per_thread
    c0 = inp.work_units * on_sp / inp.p_compute
    if inp.dp_ops_per_thread and inp.p_dp > 0:
        sp = inp.work_units * (on_sp - inp.dp_ops_per_thread) / inp.p_compute
        c0 = max(sp, inp.work_units * inp.dp_ops_per_thread / inp.p_dp)
    if inp.p_pipes > 0:
        c0 = max(c0, inp.work_units * inp.pipe_insts_per_thread / inp.p_pipes)
    tensor = inp.work_units * inp.tensor_s_per_thread
    c_worst = max(c0 * inp.non_fma_factor if inp.non_fma else c0, tensor)
    c0 = max(c0, tensor)
    d = inp.work_units * inp.bytes_per_thread
    if inp.requested_bytes is not None:
        d = max(d, inp.requested_bytes)
    u = d * inp.uncoalesced_fraction
    m_req = (d - u) / inp.p_coalesced + u / inp.p_uncoalesced
    p_slow = inp.p_achievable or inp.p_coalesced
    m_worst = (d - u) / p_slow + u / inp.p_uncoalesced if inp.coalescing_known else d / inp.p_uncoalesced
    m0 = m_req if inp.compulsory_bytes is None else min(m_req, inp.compulsory_bytes / inp.p_coalesced)
    lsu = inp.work_units * inp.lsu_ops_per_thread / inp.p_lsu if inp.p_lsu > 0 else 0.0
    fewest = (inp.lsu_ops_per_thread if inp.lsu_bytes_per_thread is None
              else min(inp.lsu_ops_per_thread, inp.lsu_bytes_per_thread / _WIDEST_ACCESS_BYTES))
    lsu_best = inp.work_units * fewest / inp.p_lsu if inp.p_lsu > 0 else 0.0
    best = max(c0, m0, lsu_best) * 1e6
    worst = (max(c_worst * inp.quantization * 1e6, m_worst * 1e6, lsu * inp.lsu_replays * inp.quantization * 1e6,
                 inp.dispatch_us) + inp.fixed_us + inp.latency_us)
    return best, max(best, worst)


def roofline_inputs(profile: Any, counts: DynamicCounts, total_threads: int, *, uncoalesced_fraction: float = 0.0,
                    coalescing_known: bool = False, compulsory_bytes: float | None = None,
                    requested_bytes: float | None = None, fixed_us: float = 0.0, dispatch_us: float = 0.0,
                    latency_us: float = 0.0, lsu_replays: float = 1.0,
                    quantization: float = 1.0) -> RooflineInputs:
    """Boat hull inputs for a kernel launch on a Kerncast GPU profile."""
    const = timing_constants()["roofline"]
    clock_hz = profile.core_clock_mhz * 1e6
    p_compute, p_dp = compute_peaks(profile)
    p_coal = profile.mem_bandwidth_gbs * 1e9
    p_achievable = achievable_bandwidth_gbs(profile)[0] * 1e9
    tensor_s, on_sp = tensor_time_per_thread(profile, counts)
    return RooflineInputs(
        work_units=float(total_threads), ops_per_thread=counts.alu_ops + on_sp, bytes_per_thread=counts.global_bytes,
        p_compute=p_compute, p_coalesced=p_coal, p_uncoalesced=p_coal / float(const["uncoalesced_slowdown"]),
        uncoalesced_fraction=uncoalesced_fraction, coalescing_known=coalescing_known, non_fma=counts.has_non_fma,
        non_fma_factor=float(const["non_fma_factor"]), compulsory_bytes=compulsory_bytes,
        requested_bytes=requested_bytes, fixed_us=fixed_us, latency_us=latency_us,
        lsu_ops_per_thread=counts.shared_insts + counts.global_insts,
        lsu_bytes_per_thread=counts.shared_bytes + counts.global_bytes, p_achievable=p_achievable,
        p_lsu=float(profile.units["LSU"]) * profile.sm_count * clock_hz, lsu_replays=lsu_replays,
        quantization=quantization, dp_ops_per_thread=counts.dp_ops, dispatch_us=dispatch_us,
        tensor_s_per_thread=tensor_s, p_dp=p_dp, pipe_ops_per_thread=counts.pipe_ops,
        pipe_insts_per_thread=counts.pipe_insts,
        folded_ops_per_thread=counts.folded_ops,
        p_pipes=(profile.units["SP"] + profile.units["ALU"]) * profile.sm_count * clock_hz
        if has_datapaths(profile.units) else 0.0,
    )


def compute_peaks(profile: Any) -> tuple[float, float]:
    """(``P_compute``, ``P_dp``) in ops/s: the SP lanes' and the double-precision units' vendor peaks, lanes x
    SMs x clock x 2 (an FMA counted twice). The roofline chart draws its roofs from these, so its roofs are the
    ones the range was computed against."""
    clock_hz, fma = profile.core_clock_mhz * 1e6, float(timing_constants()["roofline"]["fma_ops"])
    return (profile.units["SP"] * profile.sm_count * clock_hz * fma,
            float(profile.units.get("DPU", 0)) * profile.sm_count * clock_hz * fma)


def tensor_time_per_thread(profile: Any, counts: DynamicCounts) -> tuple[float, float]:
    """(seconds, SP ops) per thread of the launch's matrix instructions: at the profile's tensor-core rate
    for their input type, spread over all SMs; the FLOPs of those with no rate on this GPU go to the SP line."""
    seconds = on_sp = 0.0
    sm_hz = profile.sm_count * profile.core_clock_mhz * 1e6
    for op, issued in counts.matrix_ops.items():
        cycles = tensor_cycles(profile, op)
        if cycles is None:
            on_sp += issued * op.flops_per_warp / WARP_THREADS
        else:
            seconds += issued * cycles / WARP_THREADS / sm_hz
    return seconds, on_sp


def tensor_notes(profile: Any, counts: DynamicCounts) -> list[str]:
    """What the time models assumed of the launch's tensor-core instructions, one line per kind."""
    notes = []
    sm_hz = profile.sm_count * profile.core_clock_mhz * 1e6
    for op, issued in counts.matrix_ops.items():
        rate = tensor_rate(profile, op)
        if rate is None:
            notes.append(f"tensor cores: {profile.name} has no tensor-core rate for {op.label} products (the "
                         f"profile's [tensor] table): their FLOPs are counted on the SP lanes")
            continue
        peak = rate * (2.0 if op.sparse else 1.0) * sm_hz / 1e12
        notes.append(f"tensor cores: {issued:.4g} {op.label} products per warp of {op.flops_per_warp:g} FLOPs "
                     f"each, at {rate:g} FLOPs per SM per clock ({peak:.4g} TFLOPS on {profile.name}, the "
                     "vendor's dense peak from the profile's [tensor] table; no kernel reaches more)")
    return notes
