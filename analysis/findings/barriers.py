"""The `barrier-divergence` finding: a block-wide barrier that some threads of a block reach and others skip.

`__syncthreads()` (PTX `bar.sync 0` / `barrier.sync 0`, and the reducing `bar.red`) must be reached by every
thread of the block or by none; a barrier under a condition that differs between threads is undefined
behaviour and often a hang (compute-sanitizer's synccheck reports it at run time). Decided here from the
control flow and the divergence analysis: the barrier is control dependent on a branch (it does not
post-dominate it) whose condition depends on threadIdx or the lane id, and the path that skips the barrier
rejoins code the barrier's path runs afterwards. Conditions uniform per block (blockIdx, blockDim,
parameters) are never reported, nor a barrier after the branch's reconvergence point, nor a branch with an
early `return` side (a side whose path only leaves the kernel: a common bounds check ahead of a tiled loop;
reporting it would bury real cases), nor a condition the analysis could not read.
"""

from __future__ import annotations

from kerncast.analysis.cfg import Cfg
from kerncast.analysis.context import KernelContext, add_findings
from kerncast.analysis.finding import Finding, line_range, line_related
from kerncast.analysis.memory.analysis import BranchInfo
from kerncast.analysis.ptx.model import Imm, Instruction, line_in_file
from kerncast.analysis.rules import Code

_EXIT_OPCODES = frozenset({"ret", "exit", "trap"})


def is_block_barrier(ins: Instruction) -> bool:
    """A barrier every thread of the block must reach: `bar.sync`/`bar.red`/`barrier.sync` on barrier 0..15
    without a thread count (a count names a subset of the block, which may legitimately sit under a
    condition), and never `bar.warp.sync` (a warp's own barrier)."""
    if ins.opcode not in ("bar", "barrier") or ins.guard is not None:
        return False
    mods = set(ins.modifiers)
    if "warp" in mods or "arrive" in mods or not mods & {"sync", "red"}:
        return False
    if "red" in mods:
        return True
    return len(ins.operands) == 1 and isinstance(ins.operands[0], Imm)


def _post_dominators(cfg: Cfg) -> list[int]:
    """For every block, the bit set of the blocks that post-dominate it (itself included); the blocks without
    successors (ret, exit, trap) lead to one virtual exit. Iterated to a fixed point over bit sets."""
    n = len(cfg.blocks)
    full = (1 << n) - 1
    pdom = [full] * n
    for b in cfg.blocks:
        if not b.succs:
            pdom[b.id] = 1 << b.id
    changed = True
    order = list(reversed(cfg.rpo)) if cfg.rpo else list(range(n - 1, -1, -1))
    while changed:
        changed = False
        for bid in order:
            succs = cfg.blocks[bid].succs
            if not succs:
                continue
            meet = full
            for s in succs:
                meet &= pdom[s]
            new = meet | (1 << bid)
            if new != pdom[bid]:
                pdom[bid] = new
                changed = True
    return pdom


def _reach(cfg: Cfg, starts: list[int], stop: int | None = None) -> set[int]:
    """The blocks reachable from `starts` (included), never entering `stop`."""
    seen: set[int] = set()
    todo = [s for s in starts if s != stop]
    while todo:
        b = todo.pop()
        if b in seen:
            continue
        seen.add(b)
        todo.extend(s for s in cfg.blocks[b].succs if s != stop and s not in seen)
    return seen


def _exit_only(cfg: Cfg, bid: int) -> bool:
    """A block that only leaves the kernel (nvcc's shared `ret` block)."""
    return all(ins.opcode in _EXIT_OPCODES for ins in cfg.instructions(bid))


def _controlling(cfg: Cfg, pdom: list[int], target: int) -> set[int]:
    """The branch blocks that decide whether `target` runs, transitively: X controls Y when Y post-dominates a
    successor of X but not X itself (Y may be X: a loop's own block), and whatever controls X controls Y."""
    out: set[int] = set()
    todo = [target]
    while todo:
        y = todo.pop()
        for x in cfg.blocks:
            if len(x.succs) < 2 or x.id in out:
                continue
            strict = x.id != y and pdom[x.id] >> y & 1
            if not strict and any(pdom[s] >> y & 1 for s in x.succs):
                out.add(x.id)
                todo.append(x.id)
    return out


def divergent_barriers(cfg: Cfg, branches: list[BranchInfo]) -> list[tuple[Instruction, BranchInfo]]:
    """(barrier, branch) pairs: each block-wide barrier with the thread-dependent branch it sits under."""
    thread_branches: dict[int, BranchInfo] = {}
    for b in branches:
        ins = cfg.function.body[b.index]
        block = cfg.block_of[b.index]
        if b.depends_on and ins.opcode == "bra" and len(cfg.blocks[block].succs) == 2:
            thread_branches.setdefault(block, b)
    if not thread_branches:
        return []
    barriers = [ins for ins in cfg.function.body if is_block_barrier(ins)]
    if not barriers:
        return []
    pdom = _post_dominators(cfg)
    out: list[tuple[Instruction, BranchInfo]] = []
    for bar in barriers:
        bblock = cfg.block_of[bar.index]
        if bblock in cfg.unreachable:
            continue
        after = _reach(cfg, list(cfg.blocks[bblock].succs))
        for block in sorted(_controlling(cfg, pdom, bblock) & thread_branches.keys()):
            skipping = [_reach(cfg, [s], stop=bblock) for s in cfg.blocks[block].succs if not pdom[s] >> bblock & 1]
            if any(side and all(_exit_only(cfg, b) for b in side) for side in skipping):
                continue  # an early return: the threads on that side leave the kernel
            if any(b in after and not _exit_only(cfg, b) for side in skipping for b in side):
                out.append((bar, thread_branches[block]))
                break
    return out


def barrier_divergence(ctx: KernelContext) -> list[Finding]:
    """The kernel's `barrier-divergence` findings, one per barrier line of the analysed file."""
    if ctx.memory is None:
        return []
    findings: list[Finding] = []
    seen: set[int] = set()
    for bar, branch in divergent_barriers(ctx.cfg, ctx.memory.branches):
        line = line_in_file(bar.loc, ctx.main_file)
        if line is None or line in seen or branch.line is None:
            continue
        seen.add(line)
        start, end = line_range(ctx.cuda_source, line)
        dep = " and ".join(branch.depends_on)
        message = (f"barrier under a condition that differs between the threads of a block (it depends on {dep}, "
                   f"line {branch.line}): threads that skip the barrier leave the others waiting (undefined "
                   "behaviour, often a hang)")
        related = [line_related(ctx.cuda_source, branch.line, f"the condition, which depends on {dep}")]
        detail = {"condition": branch.condition, "condition_line": branch.line, "depends_on": list(branch.depends_on),
                  "advice": "move the barrier out of the condition (every thread of the block reaches it) and "
                            "guard only the work"}
        findings.append(Finding(Code.BARRIER_DIVERGENCE, "error", line, start, line, end, message, detail=detail,
                                related=related, kernel=ctx.report.name))
    return findings


def barrier_divergence_stage(ctx: KernelContext) -> None:
    """Pipeline stage (after the memory analysis): add the kernel's `barrier-divergence` findings."""
    add_findings(ctx, barrier_divergence)
