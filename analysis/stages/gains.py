"""The estimated gain of a performance finding, as Nsight Compute attaches one to each of its rules: the
kernel's time predicted again with that finding's cost removed, divided into the time predicted as it is.

A gain is the model's only where the time model charges the finding's cost in one place that can be set to
what the fixed code would cost, physically:

* an uncoalesced global access: its sectors per request set to what a unit-stride access of its width moves
  (the same bar the finding is raised against); a shared-memory bank conflict: its wavefronts set to the ideal.
  The memory analysis is not run again: the accesses of the finding's line are copied with those fields
  changed and handed to the time model;
* a slow integer division: each run-time `div`/`rem` of the line charged as the shift (`shr`) or mask (`and`)
  that a power-of-two divisor compiles to;
* FP64 in a float kernel: each FP64 instruction of the finding's lines charged as its FP32 twin, and the
  conversions between float and double, which the float code does not have, as nothing;
* a local-memory array: its `ld.local`/`st.local` charged as register moves (the array kept in registers);
* shared tiling: the loads a tile serves charged as shared-memory loads, and the tile's fill as the global
  traffic the finding counts for it (`tiled`);
* a launch configuration that idles lanes or SMs: the same threads along x relaunched in blocks a multiple of
  the warp wide, narrower where that gives more SMs a block (`fixed_block`), the trip counts, memory analysis
  and occupancy worked out again under that launch. No gain where the split changes each thread's work (a
  loop count that follows the block size), for a block of several dimensions or a partial last wave;
* a divergent branch: the blocks under it run by as many warps as their passing lanes fill when packed into
  whole warps (`packed`), instead of every warp with any passing lane;
* a missing `__restrict__`: the parameters' loads charged as the `ld.global.nc` nvcc then emits. The model
  charges both paths alike, as the L1 of GPUs from compute capability 7.0 caches ordinary global loads too
  (on older GPUs, whose L1 holds read-only-path loads only, the gain is unknown), and its dependence graph
  orders instructions by their registers and barriers only, so it already lets the loads run ahead of the
  stores as `__restrict__` would allow: the gain is 1.0 and the message says why (`data/gains.toml` [basis]);
* atomic contention: the line's atomics made one update per address per warp (warp aggregation, `aggregated`),
  the other warps' and blocks' updates to that address still serialised by the contention model;
* a low occupancy that registers or shared memory limit: one more resident block per SM, with the most
  registers per thread or shared bytes per block that allow it named (`raised_occupancy`), the instructions as
  they are (fewer registers that make ptxas spill would cost what no PTX shows). The model's resident blocks
  hide latency only where the launch has more blocks than one wave holds, so the gain is 1.0 elsewhere.

Each takes one extra run of the kernel's static time model (`stages.static_time`: kerncast's when the trace
model is chosen) and compares it with that model's point for the unchanged kernel. The other performance
findings (`data/gains.toml` [unknown]) say "gain unknown" and why instead of a number no model computed, as
does a priced finding whose fix the model cannot re-predict for this kernel (`NoGain`).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from importlib import resources
from typing import Any

from kerncast.analysis.context import KernelContext
from kerncast.analysis.dataflow import ODD_PTX_ERRORS
from kerncast.analysis.finding import Finding
from kerncast.analysis.findings.fp64 import fp64_instructions
from kerncast.analysis.findings.local_memory import local_accesses
from kerncast.analysis.findings.memory_access import unit_stride_sectors
from kerncast.analysis.findings.restrict import unrestricted
from kerncast.analysis.findings.tiling import kernel_reuses
from kerncast.analysis.isa import InstrClass, classify, is_runtime_division
from kerncast.analysis.launch import Launch
from kerncast.analysis.memory.analysis import AccessInfo, MemoryAnalysis, analyze_memory
from kerncast.analysis.occupancy import Occupancy, compute_occupancy
from kerncast.analysis.ptx.model import Instruction, line_in_file
from kerncast.analysis.rules import Code
from kerncast.analysis.stages.time import static_model, static_time, time_graphs
from kerncast.analysis.timing.cache_model import l1_hit_latency
from kerncast.analysis.timing.estimate import DEFAULT_TIME_MODEL, TIME_MODELS, KernelGraphs, kerncast_us, predict_time
from kerncast.analysis.tripcount import trip_counts, trip_values

#: the class of an instruction the fixed code does not have: the time models charge it nothing (as a parameter
#: read, `pipelined._is_free`)
_FREE = InstrClass("misc", "SP", "param")
#: the findings whose gain is an access's memory cost made ideal
_MEMORY_CODES = (Code.UNCOALESCED_GLOBAL, Code.SHARED_BANK_CONFLICT)
#: bytes one shared-memory wavefront serves (32 banks of 4 bytes)
_WAVEFRONT_BYTES = 128
#: the state-space and cache modifiers of a global load that its shared-memory twin does not have
_GLOBAL_ONLY = frozenset({"global", "nc", "ca", "cg", "cs", "lu", "cv"})


@cache
def _gains_data() -> dict[str, Any]:
    text = resources.files("kerncast.analysis").joinpath("data/gains.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def _little() -> float:
    """Below this ratio a finding is said to buy little (`data/gains.toml`)."""
    return float(_gains_data()["little"])


def unknown_reason(code: str) -> str | None:
    """Why a performance finding of this code has no gain (`data/gains.toml` [unknown]); None for the others."""
    reason = _gains_data()["unknown"].get(str(code))
    return str(reason) if reason is not None else None


def ideal_access(a: AccessInfo, code: str) -> AccessInfo | None:
    """`a` with the cost `code` charges it removed, or None when `code` charges it nothing."""
    if code == Code.UNCOALESCED_GLOBAL and a.space == "global" and a.known and a.sectors_per_request:
        target = max(float(a.ideal_sectors or 0.0), unit_stride_sectors(a))
        if a.sectors_per_request > target:
            return replace(a, sectors_per_request=target, ideal_sectors=min(float(a.ideal_sectors or target),
                                                                             target), lines_per_request=None)
    if (code == Code.SHARED_BANK_CONFLICT and a.space == "shared" and a.known and a.wavefronts
            and a.ideal_wavefronts and a.wavefronts > a.ideal_wavefronts):
        return replace(a, wavefronts=a.ideal_wavefronts)
    return None


def without_cost(memory: MemoryAnalysis, finding: Finding, kernel_line: int | None) -> MemoryAnalysis | None:
    """A shallow copy of `memory` whose accesses on the finding's line (several instructions of one line make
    one finding) no longer pay what the finding reports; None when no access of the line does."""
    changed = False
    accesses: list[AccessInfo] = []
    for a in memory.accesses:
        line = a.line if a.line is not None else kernel_line  # as the finding's place is chosen
        better = ideal_access(a, finding.code) if line == finding.line else None
        changed |= better is not None
        accesses.append(better or a)
    return replace(memory, accesses=accesses) if changed else None


def gain_text(speedup: float) -> str:
    """What a diagnostic says of a gain. Only a fix that changes the launch can be slower than the code as it is
    (fewer SMs busy for fewer idle lanes): a removed cost never is."""
    if speedup * _little() < 1.0:
        return f"the fix as proposed is slower (model: {speedup:.2f}x)"
    if speedup < _little():
        return f"fixing this buys little (model: {speedup:.2f}x)"
    digits = 2 if speedup < 2 else 1 if speedup < 10 else 0
    return f"fixing this: about {speedup:.{digits}f}x faster (model)"


def _twin(ins: Instruction, opcode: str, modifiers: tuple[str, ...]) -> InstrClass:
    """The class of `ins` written with another opcode and modifiers (its cached derived facts dropped)."""
    return classify(replace(ins, opcode=opcode, modifiers=modifiers, register_use=None, derived=None))


def _on_lines(ctx: KernelContext, ins: Instruction, lines: set[int]) -> bool:
    return line_in_file(ins.loc, ctx.main_file) in lines


def cheaper_classes(ctx: KernelContext, finding: Finding) -> dict[int, InstrClass]:
    """Instruction index -> the class the fixed code charges it, for the findings whose cost is instructions;
    empty when the finding's instructions are not found."""
    out: dict[int, InstrClass] = {}
    if finding.code == Code.SLOW_INTEGER_DIVISION:
        for ins in ctx.function.body:
            if is_runtime_division(ins) and _on_lines(ctx, ins, {finding.line}):
                kind = next(m for m in ins.modifiers if m[0] in "su" and m[1:].isdigit())
                bits = kind[1:]
                out[ins.index] = (_twin(ins, "shr", (kind,)) if ins.opcode == "div"
                                  else _twin(ins, "and", (f"b{bits}",)))
    elif finding.code == Code.FP64_IN_FP32:
        lines = {int(n) for n in finding.detail.get("lines", [finding.line])}
        for ins in fp64_instructions(ctx):
            if not _on_lines(ctx, ins, lines):
                continue
            if ins.opcode == "cvt" and "f32" in ins.modifiers:
                out[ins.index] = _FREE  # float <-> double: the float code has no conversion
            else:
                out[ins.index] = _twin(ins, ins.opcode, tuple("f32" if m == "f64" else m for m in ins.modifiers))
    elif finding.code == Code.MISSING_RESTRICT:
        read = unrestricted(ctx)
        for _, use, _ in read[1] if read is not None else ():
            for ins in use.plain_loads:
                rest = tuple(m for m in ins.modifiers if m != "global")
                out[ins.index] = _twin(ins, "ld", ("global", "nc", *rest))  # what nvcc emits with __restrict__
    elif finding.code == Code.LOCAL_MEMORY:
        loads, stores = local_accesses(ctx)
        for ins in loads + stores:
            out[ins.index] = _twin(ins, "mov", (ins.modifiers[-1],))  # the element kept in a register
    return out


def _shared_twin(ins: Instruction) -> InstrClass:
    """The class of global load `ins` as the same load from shared memory (`ld.shared` of its width)."""
    kept = tuple(m for m in ins.modifiers if m not in _GLOBAL_ONLY and not m.startswith("L"))
    return _twin(ins, "ld", ("shared", *kept))


def _tile_alignment(ctx: KernelContext, a: AccessInfo) -> int | None:
    """The alignment of a tile row's element in shared memory: a row of blockDim.x elements starts on a multiple
    of its bytes (up to 16, the widest vector load), and the element lies at its own offset in it."""
    launch = ctx.report.launch
    block = launch.block_dims() if launch is not None else None
    if not block or a.width_bytes <= 0:
        return a.align
    row = block[0] * a.width_bytes
    return math.gcd(16, row) if row % a.width_bytes == 0 else a.align


def tiled(ctx: KernelContext, finding: Finding) -> tuple[MemoryAnalysis, dict[int, InstrClass]] | None:
    """The kernel's memory analysis and instruction classes as a shared tile would make them for the loads of a
    `shared-tiling` finding, None when they are not found.

    Each load the tile serves becomes a load from shared memory at its place in the loop (the shared latency in
    the chain; the wavefronts of its lanes' distinct bytes, a broadcast or a contiguous row: no conflict). The
    tile is filled from global memory with the requests the finding counts for it (`tiled_requests`, each
    element once per block), moving the tile's sectors (`tiled_sectors`: whole rows of lanes, not the
    broadcast or misaligned sectors of the loads it replaces): a copy of each load's access with its
    executions scaled by that share and those sectors per request, under an index of no instruction, so that
    it adds its DRAM/L2 traffic and footprint (the same distinct bytes) and no issue slot or latency. What the
    fill adds besides, a global load and a shared store per thread per tile and the two barriers around each
    tile, is left out: the gain is the loop's side of the trade."""
    memory = ctx.memory
    if memory is None:
        return None
    found = [r for r in kernel_reuses(ctx) if r.line == finding.line and r.requests > 0 and r.tiled_requests > 0]
    share = {i: r.tiled_requests / r.requests for r in found for i in r.loads}
    fill_sectors = {i: r.tiled_sectors / r.tiled_requests for r in found for i in r.loads}
    if not share:
        return None
    body = ctx.function.body
    fresh = len(body)
    accesses: list[AccessInfo] = []
    addresses = dict(memory.addresses)
    classes: dict[int, InstrClass] = {}
    sector = float(getattr(ctx.gpu, "sector_bytes", None) or 32)
    for a in memory.accesses:
        if a.index not in share or a.space != "global" or a.kind != "load":
            accesses.append(a)
            continue
        bytes_needed = float(a.ideal_sectors or 1.0) * sector
        waves = max(1.0, -(-bytes_needed // _WAVEFRONT_BYTES))
        # the tile is an array of its own, its rows aligned to whole vector loads where their bytes allow: the
        # row reads of an unrolled loop merge into vector loads there (`estimate.vector_merged`)
        accesses.append(replace(a, space="shared", sectors_per_request=None, ideal_sectors=None,
                                wavefronts=waves, ideal_wavefronts=waves, align=_tile_alignment(ctx, a),
                                lines_per_request=None))
        classes[a.index] = _shared_twin(body[a.index])
        if a.index in memory.addresses:
            addresses[fresh] = memory.addresses[a.index]
        accesses.append(replace(a, index=fresh, executions=a.executions * share[a.index],
                                sectors_per_request=fill_sectors[a.index], ideal_sectors=fill_sectors[a.index]))
        fresh += 1
    if not classes:
        return None
    return replace(memory, accesses=accesses, addresses=addresses), classes


class NoGain(Exception):
    """A finding of a priced code whose fix this kernel's model cannot re-predict, and why (its `gain_unknown`)."""


def fixed_block(ctx: KernelContext, finding: Finding) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The (block, grid) that a `launch-configuration` warning's fix gives the same threads along x: a block
    whose width is a multiple of the warp, as wide as the user's rounded up, or narrower where that leaves SMs
    without a block (the widest that gives every SM one, else one warp); for a last wave under half full, the
    width whose waves leave the fewest block slots idle (`fullest_last_wave`). Raises NoGain where no such
    reshaping applies (a block of several dimensions, no narrower block or fuller last wave to take). The grid
    is rounded up to whole blocks, and the up to one block's threads beyond the old count are charged the full
    work (a bounds check would send them home at once): the gain errs low."""
    launch, gpu = ctx.report.launch, ctx.gpu
    assert launch is not None and gpu is not None
    block, grid = launch.block_dims(), launch.grid_dims()
    if block is None or grid is None:
        raise NoGain("the launch's shape is not known")
    bx, by, bz = block
    if by * bz != 1:
        raise NoGain("the block has several dimensions: which one to reshape is the code's choice")
    warp = gpu.warp_size
    threads = grid[0] * bx
    others = grid[1] * grid[2]
    if "tail_wave_fill" in finding.detail:
        new = fullest_last_wave(ctx, threads, others, bx)
        return (new, 1, 1), (-(-threads // new), grid[1], grid[2])
    widest = min(gpu.limits.max_threads_per_block, max(warp, -(-bx // warp) * warp))
    new = widest
    if others * -(-threads // new) < gpu.sm_count:
        fits = [w for w in range(warp, widest + 1, warp) if others * -(-threads // w) >= gpu.sm_count]
        new = max(fits) if fits else warp
    if new == bx:
        raise NoGain(f"a block of {bx} threads is one warp already: more blocks need more threads, which the "
                     "work decides")
    return (new, 1, 1), (-(-threads // new), grid[1], grid[2])


def idle_share(ctx: KernelContext, width: int, threads: int, others: int) -> float | None:
    """The share of the GPU's block slots a launch of `threads` along x in blocks `width` wide leaves idle over
    its waves (the last wave's empty slots over all the waves' slots); None where such a block cannot run."""
    launch = ctx.report.launch
    assert ctx.gpu is not None and launch is not None
    shared = (ctx.report.shared_bytes or 0) + launch.dynamic_shared
    occ = compute_occupancy(ctx.gpu, width, ctx.report.registers or 0, shared)
    if occ.active_blocks_per_sm <= 0:
        return None
    per_wave = ctx.gpu.sm_count * occ.active_blocks_per_sm
    blocks = others * -(-threads // width)
    waves = -(-blocks // per_wave)
    return (waves * per_wave - blocks) / (waves * per_wave)


def fullest_last_wave(ctx: KernelContext, threads: int, others: int, width: int) -> int:
    """The block width, a multiple of the warp, whose waves leave the fewest block slots idle for the same
    threads along x (the nearest to `width` among equals); NoGain where none leaves fewer than `width` does."""
    assert ctx.gpu is not None
    warp = ctx.gpu.warp_size
    now = idle_share(ctx, width, threads, others)
    scored = [(idle, abs(w - width), w) for w in range(warp, ctx.gpu.limits.max_threads_per_block + 1, warp)
              if (idle := idle_share(ctx, w, threads, others)) is not None]
    if not scored or now is None or min(scored)[0] >= now:
        raise NoGain("no block size of the warp's multiples fills the last wave better for the same threads")
    return min(scored)[2]


def _relaunched(ctx: KernelContext, block: tuple[int, int, int], grid: tuple[int, int, int]) -> Launch:
    """The kernel's launch with `block` and `grid` in place of its own (every other field as found)."""
    launch = ctx.report.launch
    assert launch is not None
    return replace(launch, block=replace(launch.block, value=block), grid=replace(launch.grid, value=grid))


def trips_follow_launch(ctx: KernelContext, block: tuple[int, int, int], grid: tuple[int, int, int]) -> bool:
    """Whether a loop's trip count changes when the kernel is launched as `block` x `grid` instead of as now (a
    tree sum's loop runs log2(blockDim) times): the reshaped launch then splits the work differently, and a gain
    that keeps each thread's work must say it holds the counts."""
    moved = _relaunched(ctx, block, grid)
    after_counts = trip_counts(ctx.function, ctx.cfg, ctx.loops, moved, ctx.dataflow, ctx.main_file)
    return trip_values(after_counts) != trip_values(ctx.trip_counts)  # the trip-count stage's, under `launch`


def relaunched_time(ctx: KernelContext, block: tuple[int, int, int], grid: tuple[int, int, int]) -> float:
    """The static model's time of the kernel launched as `block` x `grid`: its memory analysis and occupancy
    worked out again under that launch, each thread's loops run as often as the trip-count stage found for the
    launch as it is (the same work split otherwise; `trips_follow_launch` tells where the code's own counts
    would change). Raises NoGain where the launch cannot run."""
    launch, gpu = ctx.report.launch, ctx.gpu
    assert launch is not None and gpu is not None
    moved = _relaunched(ctx, block, grid)
    tpb = math.prod(block)
    occ = compute_occupancy(gpu, tpb, ctx.report.registers or 0,
                            (ctx.report.shared_bytes or 0) + launch.dynamic_shared)
    if occ.active_blocks_per_sm <= 0:
        raise NoGain(f"a block of {tpb} threads does not fit on an SM")
    trips = {h: int(v) for h, v in trip_values(ctx.trip_counts).items() if v >= 0}
    try:
        memory = analyze_memory(ctx.module, ctx.function, ctx.cfg, ctx.loops, block, moved.known_params(), trips,
                                ctx.options.thresholds, ctx.main_file, cuda_source=ctx.cuda_source,
                                budget_s=ctx.options.budget_s, dataflow=ctx.dataflow)
    except ODD_PTX_ERRORS as exc:  # as the memory stage: PTX the analysis cannot read is no crash
        raise NoGain(f"the memory analysis under that launch failed ({type(exc).__name__})") from exc
    return time_at(ctx, memory, block, grid, occ)


def time_at(ctx: KernelContext, memory: MemoryAnalysis | None, block: tuple[int, int, int],
            grid: tuple[int, int, int], occ: Occupancy) -> float:
    """The static model's time of the kernel with `memory` as its memory analysis, launched as `block` x `grid`
    with `occ`'s resident blocks per SM (`static_time` for another launch or occupancy)."""
    assert ctx.gpu is not None
    model = static_model(ctx)
    sizes = {"blocks": math.prod(grid), "threads_per_block": math.prod(block),
             "trips": trip_values(ctx.trip_counts), "blocks_per_sm": occ.active_blocks_per_sm,
             "registers": ctx.report.registers, "shared_bytes": ctx.report.shared_bytes or 0, "memory": memory,
             "grid": grid, "block": block, "graphs": time_graphs(ctx),
             "dynamic_shared": ctx.report.launch.dynamic_shared if ctx.report.launch else 0}
    if model == DEFAULT_TIME_MODEL:
        return kerncast_us(ctx.cfg, ctx.loops, ctx.gpu, **sizes)
    return predict_time(ctx.cfg, ctx.loops, ctx.gpu, occupancy=occ.occupancy, assumptions=[], model=model,
                        **sizes).models[model]


def _largest(low: int, high: int, fits: Callable[[int], bool]) -> int | None:
    """The largest value in [low, high] for which `fits` holds, `fits` holding for every value below one that
    it holds for (fewer registers or bytes never lower the occupancy); None where it holds for none."""
    if high < low or not fits(low):
        return None
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits(mid) else (low, mid - 1)
    return low


def raised_occupancy(ctx: KernelContext) -> tuple[Occupancy, str]:
    """The occupancy one more resident block per SM gives where registers or shared memory limit it, and what
    the kernel must fit in for it (the most registers per thread or shared bytes per block that allow it).
    Raises NoGain where another limit holds the occupancy too or the block size limits it (a launch change)."""
    launch, gpu, occ = ctx.report.launch, ctx.gpu, ctx.report.occupancy
    assert launch is not None and gpu is not None
    if occ is None or not launch.threads_per_block:
        raise NoGain("the occupancy is not known")
    tpb, regs = launch.threads_per_block, ctx.report.registers or 0
    shared = (ctx.report.shared_bytes or 0) + launch.dynamic_shared
    want = occ.active_blocks_per_sm + 1

    def more(r: int, b: int) -> bool:
        return compute_occupancy(gpu, tpb, r, b).active_blocks_per_sm >= want

    if occ.limiter == "registers" and regs > 1:
        fit = _largest(1, regs - 1, lambda r: more(r, shared))
        if fit is not None:
            return compute_occupancy(gpu, tpb, fit, shared), f"at most {fit} registers per thread (now {regs})"
    elif occ.limiter == "shared" and shared > 0:
        fit = _largest(0, shared - 1, lambda b: more(regs, b))
        if fit is not None:
            return (compute_occupancy(gpu, tpb, regs, fit),
                    f"at most {fit} bytes of shared memory per block (now {shared})")
    if occ.limiter in ("registers", "shared"):
        raise NoGain(f"another limit holds the occupancy at {occ.active_blocks_per_sm} blocks per SM as well")
    raise NoGain(f"the occupancy is limited by {occ.limiter}: the block size, which the launch and the work "
                 "decide")


def aggregated(memory: MemoryAnalysis, finding: Finding) -> MemoryAnalysis | None:
    """`memory` with the atomics of an `atomic-contention` finding's line made as warp aggregation makes them:
    one update per address per warp instruction (the lanes' values combined first), so no same-address lane of
    a warp waits for another's update; the updates of other warps and blocks to that address remain, and the
    contention model (`timing/atomics.py`) charges them. The combining shuffles (five steps of a 32-lane tree)
    are not charged. None where the line has no such atomic."""
    changed = False
    accesses: list[AccessInfo] = []
    for a in memory.accesses:
        if a.kind == "atomic" and a.line == finding.line and a.lanes_per_address and a.lanes_per_address > 1:
            changed = True
            if a.space == "global":
                a = replace(a, lanes_per_address=None, lanes_upper_bound=False, sectors_per_request=1.0,
                            ideal_sectors=1.0)
            else:
                a = replace(a, lanes_per_address=None, lanes_upper_bound=False,
                            wavefronts=a.ideal_wavefronts or a.wavefronts)
        accesses.append(a)
    return replace(memory, accesses=accesses) if changed else None


def packed(memory: MemoryAnalysis, ctx: KernelContext, finding: Finding) -> MemoryAnalysis:
    """`memory` with the basic blocks under a `divergent-branch` finding's branch run by as many warps as their
    passing lanes fill (`MemoryAnalysis.packed_share`): what making the condition uniform per warp (the
    threads that work numbered first, as sequential addressing does for a reduction) leaves, while a divergent
    warp issues the whole block for any lane. A block under a further guard inside the branch is packed too
    (its share is that of all its guards' passing lanes), so a nested divergent branch's cost is counted in the
    outer one's gain as well. Raises NoGain where no block under the branch would be run by fewer warps (a
    loop's exit that the lanes take at different iterations: their counts are the data's)."""
    cfg = ctx.cfg
    heads = {cfg.block_of[b.index] for b in memory.branches
             if b.divergent and b.line == finding.line and 0 <= b.index < len(cfg.block_of)}
    fewer = {b: share for b, share in memory.packed_share.items()
             if any(h != b and cfg.dominates(h, b) for h in heads)}
    if not fewer:
        raise NoGain("no block under the branch would be run by fewer warps with its lanes packed")
    return replace(memory, warp_share={**memory.warp_share, **fewer})


def _after(ctx: KernelContext, finding: Finding) -> float | None:
    """The static model's time with the finding's cost removed; None where nothing of the kernel carries it."""
    memory = ctx.memory
    if finding.code in _MEMORY_CODES:
        ideal = without_cost(memory, finding, ctx.report.line) if memory is not None else None
        return static_time(ctx, ideal) if ideal is not None else None
    if finding.code == Code.LAUNCH_CONFIGURATION:
        block, grid = fixed_block(ctx, finding)
        after = relaunched_time(ctx, block, grid)
        finding.detail["gain_launch"] = {"block": list(block), "grid": list(grid),
                                         "trips_held": trips_follow_launch(ctx, block, grid)}
        return after
    if finding.code == Code.LOW_OCCUPANCY:
        occ, fit = raised_occupancy(ctx)
        launch = ctx.report.launch
        assert launch is not None and launch.block_dims() is not None and launch.grid_dims() is not None
        finding.detail["gain_fit"] = fit
        return time_at(ctx, memory, launch.block_dims(), launch.grid_dims(), occ)  # type: ignore[arg-type]
    if finding.code == Code.ATOMIC_CONTENTION and memory is not None:
        fewer = aggregated(memory, finding)
        return static_time(ctx, fewer) if fewer is not None else None
    if finding.code == Code.DIVERGENT_BRANCH and memory is not None:
        return static_time(ctx, packed(memory, ctx, finding))
    if finding.code == Code.SHARED_TILING:
        tile = tiled(ctx, finding)
        if tile is None:
            return None
        graphs = time_graphs(ctx)
        return static_time(ctx, tile[0], graphs=KernelGraphs(graphs.dags, {**graphs.classes, **tile[1]}, graphs.memo))
    if finding.code == Code.MISSING_RESTRICT and ctx.gpu is not None and l1_hit_latency(ctx.gpu) is None:
        raise NoGain(f"the L1 of {ctx.gpu.name} caches global loads on the read-only path only, a reuse the "
                     "time model does not price")
    classes = cheaper_classes(ctx, finding)
    if not classes:
        return None
    graphs = time_graphs(ctx)
    if all(graphs.classes.get(i) == cls for i, cls in classes.items()) and ctx.report.time is not None:
        return ctx.report.time.models.get(static_model(ctx))  # charged alike: the same run's answer
    return static_time(ctx, memory, graphs=KernelGraphs(graphs.dags, {**graphs.classes, **classes}, graphs.memo))


def finding_gain(ctx: KernelContext, finding: Finding) -> dict[str, Any] | None:
    """The finding's gain, {"speedup", "time_us_before", "time_us_after", "model"}, or None without one."""
    est = ctx.report.time
    if est is None or ctx.memory is None:
        return None
    model = static_model(ctx)
    before = est.models.get(model)
    if not before:
        return None
    after = _after(ctx, finding)
    if not after or after <= 0:
        return None
    return {"speedup": round(before / after, 3), "time_us_before": before, "time_us_after": after,
            "model": TIME_MODELS[model]}


#: the findings a re-prediction can price
GAINED = frozenset({*_MEMORY_CODES, Code.SLOW_INTEGER_DIVISION, Code.FP64_IN_FP32, Code.LOCAL_MEMORY,
                    Code.SHARED_TILING, Code.LAUNCH_CONFIGURATION, Code.DIVERGENT_BRANCH, Code.MISSING_RESTRICT,
                    Code.ATOMIC_CONTENTION, Code.LOW_OCCUPANCY})


def gain_stage(ctx: KernelContext) -> None:
    """Attach a gain to each performance finding of the kernel that has one, in its detail and its message; a
    performance finding no re-prediction prices says "gain unknown" and why."""
    if ctx.report.time is None:
        return  # no time, nothing to compare with (a launch that cannot run says so itself)
    for f in ctx.report.findings:
        if "gain" in f.detail or "gain_unknown" in f.detail or f.severity == "error":
            continue
        reason = unknown_reason(f.code)
        if reason is not None:
            f.detail["gain_unknown"] = reason
            f.message += f"; gain unknown: {reason}"
            continue
        if f.code not in GAINED:
            continue
        try:
            gain = finding_gain(ctx, f)
        except NoGain as why:
            f.detail["gain_unknown"] = str(why)
            f.message += f"; gain unknown: {why}"
            continue
        if gain is None:
            continue
        f.detail["gain"] = gain
        fit = f.detail.get("gain_fit")
        if fit is not None:  # what the kernel must fit in for the occupancy the gain was predicted at
            f.message += f"; with one more block per SM, {fit}"
        shape = f.detail.get("gain_launch")
        if shape is not None:  # the launch the gain was predicted for
            held = (", each thread's loops run as often as now: their counts follow the launch's shape, so the "
                    "code must keep that work" if shape["trips_held"] else "")
            f.message += (f"; as {math.prod(shape['grid'])} blocks of {math.prod(shape['block'])} threads "
                          f"(the same threads along x{held})")
        basis = _gains_data().get("basis", {}).get(str(f.code))
        if basis is not None:  # what the model prices of the fix, and what it already assumes
            gain["basis"] = basis
            f.message += f"; {basis}"
        f.message += f"; {gain_text(gain['speedup'])}"
