"""What the SASS of every calibration microbenchmark must hold, and the check that it does.

Each latency or throughput kernel (kc_chains.cu) is named for the Op it measures; the table below says which
SASS instructions carry that Op and how many one step of the chain executes. The check then requires, in the
unrolled loop body: a count of those instructions that is a whole number of unrolled steps (no step folded
into another or dropped), exactly ILP independent chains, and every instruction of a chain reading (through
registers, possibly via helper instructions such as the FMUL.RZ before MUFU.SIN) the previous one's result.
The memory kernels (kc_memory.cu) get the checks of their access pattern: a dependent load chain for the
latency chases, independent loads for the streams, and for the shared-memory stream enough independent,
conflict-free LDS per iteration to keep one warp request per SM per clock issued.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kerncast.analysis.calibration.sass import Function, Instruction, chains, fast_path, loop_control

#: kc::kUnroll in kc_chains.cu: steps per iteration of the chain kernels' unrolled inner loop
CHAIN_UNROLL = 16
#: kc::kSharedLoadsPerIteration in kc_memory.cu
SHARED_LOADS_PER_ITERATION = 8
#: unroll pragmas of the chase loops in kc_memory.cu
GLOBAL_CHASE_UNROLL = 4
SMALL_CHASE_UNROLL = 16
#: the least share of LDS among the shared stream loop's instructions: an SM's four schedulers issue four warp
#: instructions per clock and its shared memory serves one warp request per clock, so a quarter would just do;
#: half leaves room for the scheduler's other work
SHARED_STREAM_MIN_LDS_SHARE = 0.5
#: kc::kAtomicUnroll in kc_atomics.cu
ATOMIC_UNROLL = 4
#: SASS that combines a warp's lanes before an atomic (a vote, a population count, a warp reduction, a match)
_AGGREGATION = r"VOTEU?\..*|U?POPC|REDUX(\..*)?|MATCH\..*|SHFL\..*"
#: the SASS architectures every microbenchmark is checked on (Ampere, Ada, Hopper)
ARCHS = ("sm_80", "sm_89", "sm_90")


@dataclass(frozen=True)
class ChainSpec:
    """The SASS of one Op: the opcodes (full match, modifiers included) and how many run per chain step."""

    opcodes: str
    per_step: int
    #: region the chain is read from: "loop" (the unrolled loop body) or "linear" (the kernel's fast path in
    #: program order, see sass.fast_path, for Ops whose step branches around an out-of-line slow path)
    region: str = "loop"
    #: False for an Op with no register dependency between steps (a barrier): only the count is checked
    dependent: bool = True


#: Op struct name in kc_ops.cu -> its SASS
CHAIN_SPECS: dict[str, ChainSpec] = {
    "OpAddf": ChainSpec(r"FADD(\..*)?", 1),
    "OpSubf": ChainSpec(r"FADD(\..*)?", 1),
    "OpMulf": ChainSpec(r"FMUL(\..*)?", 1),
    "OpAdds": ChainSpec(r"IADD3(\..*)?|VIADD|IMAD\.IADD|IADD", 1),
    "OpSubs": ChainSpec(r"IADD3(\..*)?|VIADD|IMAD\.IADD|IADD", 1),
    "OpMul": ChainSpec(r"IMAD(\.(?!MOV|IADD|WIDE).*)?", 1),
    "OpAnd": ChainSpec(r"LOP3\.LUT", 1),
    "OpLogic": ChainSpec(r"BREV", 1),
    "OpFma": ChainSpec(r"FFMA(\..*)?", 1),
    "OpMads": ChainSpec(r"IMAD(\.(?!MOV|IADD|WIDE).*)?", 1),
    "OpDivf": ChainSpec(r"MUFU\.RCP", 1, region="linear"),
    "OpDivs": ChainSpec(r"MUFU\.RCP", 1),
    "OpSqrt": ChainSpec(r"MUFU\.RSQ", 1, region="linear"),
    "OpSfu": ChainSpec(r"MUFU\.SIN", 1),
    "OpMov": ChainSpec(r"SEL|MOV", 2),
    "OpCvt": ChainSpec(r"I2F.*|F2I.*", 2),
    "OpSetp": ChainSpec(r"ISETP\..*|SEL", 2),
    "OpShfl": ChainSpec(r"SHFL\.IDX", 1),
    "OpMma": ChainSpec(r"HMMA\..*", 1),
    "OpAtom": ChainSpec(r"ATOMG?\..*", 1),
    "OpSync": ChainSpec(r"BAR\.SYNC.*", 1, dependent=False),
}

_CHAIN_KERNEL_RE = re.compile(r"chain_kernelINS_(\d+)(Op\w+?)ELi(\d+)E")


def chain_kernels(functions: dict[str, Function]) -> dict[tuple[str, int], Function]:
    """The chain_kernel<Op, ILP> instances of a compiled harness by (Op name, ILP)."""
    out: dict[tuple[str, int], Function] = {}
    for name, fn in functions.items():
        match = _CHAIN_KERNEL_RE.search(name)
        if match and len(match.group(2)) == int(match.group(1)):
            out[(match.group(2), int(match.group(3)))] = fn
    return out


def check_chain(fn: Function, op: str, ilp: int) -> list[str]:
    """Problems of one chain kernel's SASS (empty when the chain is all there)."""
    spec = CHAIN_SPECS[op]
    label = f"{op} ILP {ilp}"
    if spec.region == "linear":
        block = fast_path(fn)
        skip: set[int] = set()
    else:
        block = fn.largest_block(spec.opcodes)
        skip = loop_control(block)
    found = chains(block, spec.opcodes, skip)
    count = sum(len(c) for c in found)
    step = CHAIN_UNROLL * spec.per_step * ilp
    problems: list[str] = []
    if count == 0 or (spec.region == "loop" and count % step):
        problems.append(f"{label}: {count} instructions matching {spec.opcodes} in the loop body, expected a "
                        f"multiple of {step} ({CHAIN_UNROLL} steps x {spec.per_step} x ILP {ilp}): ptxas "
                        f"folded or dropped part of the chain")
    elif count < step:
        problems.append(f"{label}: only {count} instructions matching {spec.opcodes}, expected at least {step}")
    if not spec.dependent or problems:
        return problems
    if spec.region == "loop" and len(found) != ilp:
        sizes = sorted((len(c) for c in found), reverse=True)
        problems.append(f"{label}: the loop body holds {len(found)} dependent chains (lengths {sizes[:8]}), "
                        f"expected {ilp} independent ones")
    elif spec.region == "linear" and max(len(c) for c in found) < CHAIN_UNROLL * spec.per_step:
        problems.append(f"{label}: the longest dependent run is {max(len(c) for c in found)} instructions, "
                        f"expected at least {CHAIN_UNROLL * spec.per_step}")
    return problems


def _single(functions: dict[str, Function], fragment: str) -> Function | None:
    found = [fn for name, fn in functions.items() if fragment in name]
    return found[0] if len(found) == 1 else None


def check_chase(fn: Function | None, label: str, opcodes: str, unroll: int) -> list[str]:
    """A latency chase: the loop body's loads form one chain, each load's address the previous load's value."""
    if fn is None:
        return [f"{label}: kernel not found in the SASS"]
    block = fn.largest_block(opcodes)
    found = chains(block, opcodes, loop_control(block))
    count = sum(len(c) for c in found)
    if count < unroll or count % unroll:
        return [f"{label}: {count} loads matching {opcodes} in the loop body, expected a multiple of {unroll}"]
    if len(found) != 1:
        return [f"{label}: the loads form {len(found)} chains, expected one dependent chain"]
    return []


def check_stream(fn: Function | None, label: str, opcodes: str, least: int) -> list[str]:
    """A throughput stream: at least `least` loads per loop body, none depending on another."""
    if fn is None:
        return [f"{label}: kernel not found in the SASS"]
    block = fn.largest_block(opcodes)
    found = chains(block, opcodes, loop_control(block))
    loads = sum(len(c) for c in found)
    if loads < least:
        return [f"{label}: {loads} loads matching {opcodes} in the loop body, expected at least {least}"]
    dependent = [c for c in found if len(c) > 1]
    if dependent:
        return [f"{label}: {len(dependent)} loads depend on another load of the loop (expected independent)"]
    return []


_LDS_ADDRESS_RE = re.compile(r"^\[(?P<base>R\d+)(?:\+UR\d+)?(?:\+(?P<offset>0x[0-9a-f]+))?\]$")


def _lane_word_address(block: list[Instruction], fn: Function, register: int) -> bool:
    """Whether `register` holds 4 x (lane index), the byte offset of word `lane` in a bank row, as ptxas writes
    it: the thread index (SR_TID.X or SR_LANEID) times 4 (a multiply by 4 or a shift by 2) masked to 0x7c."""
    wanted = {register}
    from_lane = scaled = masked = False
    for ins in reversed(fn.instructions[: fn.instructions.index(block[0])]):
        if not wanted & set(ins.dests):
            continue
        ops = ins.operands
        from_lane |= any(op in ("SR_TID.X", "SR_LANEID") for op in ops)
        masked |= ins.base == "LOP3" and "0x7c" in ops
        scaled |= (ins.opcode.startswith("IMAD.SHL") and "0x4" in ops) or \
            (ins.base in ("SHF", "LEA") and "0x2" in ops) or (ins.opcode.startswith("SHL") and "0x2" in ops)
        wanted -= set(ins.dests)
        wanted |= set(ins.sources)
    return from_lane and scaled and masked


def check_shared_stream(fn: Function | None) -> list[str]:
    """The shared throughput loop: enough independent 32-bit LDS, one base, bank-preserving offsets.

    Lane l's base address is word l of the tile and every offset is a multiple of 128 bytes (32 words), so the
    32 lanes of each request read 32 different banks: conflict-free by construction, checked here on the SASS.
    """
    label = "shared_stream_kernel"
    problems = check_stream(fn, label, r"LDS(\.U)?(\.32)?", SHARED_LOADS_PER_ITERATION)
    if problems or fn is None:
        return problems
    block = fn.largest_block(r"LDS(\.U)?(\.32)?")
    loads = [i for i in block if re.fullmatch(r"LDS(\.U)?(\.32)?", i.opcode)]
    bases, offsets = set(), []
    for ins in loads:
        match = _LDS_ADDRESS_RE.match(ins.operands[-1])
        if not match:
            return [f"{label}: LDS address {ins.operands[-1]} is not a base register plus an immediate"]
        bases.add(match.group("base"))
        offsets.append(int(match.group("offset") or "0", 16))
    if len(bases) != 1:
        problems.append(f"{label}: the LDS use {len(bases)} base registers, expected one (no address arithmetic)")
    if any(off % 128 for off in offsets):
        problems.append(f"{label}: LDS offsets {sorted(set(offsets))} are not all multiples of 128 bytes, so "
                        "lanes would move to other banks")
    if len(bases) == 1 and not _lane_word_address(block, fn, int(next(iter(bases))[1:])):
        problems.append(f"{label}: the LDS base register is not 4 x lane (one word per bank for the 32 lanes)")
    share = len(loads) / max(1, len(block))
    if share < SHARED_STREAM_MIN_LDS_SHARE:
        problems.append(f"{label}: LDS are {share:.0%} of the loop's instructions, expected at least "
                        f"{SHARED_STREAM_MIN_LDS_SHARE:.0%} so that issue cannot limit the loads")
    return problems


def check_launch_kernels(functions: dict[str, Function]) -> list[str]:
    """The launch-overhead kernel does nothing at all; the clock kernel spins on the SM clock in a loop."""
    problems: list[str] = []
    empty = _single(functions, "empty_kernel")
    # the stack pointer set-up (R1 from the constant bank) opens every kernel and is no work
    work = [i.opcode for i in empty.instructions if i.base not in ("EXIT", "BRA", "NOP")
            and not (i.dests == (1,) and "c[0x0][0x28]" in i.operands)] if empty else None
    if work is None:
        problems.append("empty_kernel: kernel not found in the SASS")
    elif work:
        problems.append(f"empty_kernel: executes {work}, expected nothing but EXIT")
    spin = _single(functions, "spin_kernel")
    loop = spin.largest_block(r"CS2R(\..*)?|S2UR|S2R") if spin else []
    reads_clock = any("SR_CLOCKLO" in " ".join(i.operands) for i in loop)
    if spin is None or not reads_clock or not loop or loop[-1].base != "BRA":
        problems.append("spin_kernel: no loop that reads SR_CLOCKLO")
    return problems


def check_atomic_kernels(functions: dict[str, Function]) -> list[str]:
    """The atomics benchmarks (kc_atomics.cu): each loop body issues one global reduction per step (`RED`/`REDG`,
    all on one address register), and the lane-replay kernel has no warp aggregation, so the hardware replays
    its same-address lanes as the benchmark means it to."""
    problems: list[str] = []
    for label in ("same_address_kernel", "lane_replay_kernel"):
        fn = _single(functions, label)
        if fn is None:
            problems.append(f"{label}: kernel not found in the SASS")
            continue
        block = fn.largest_block(r"REDG?\..*")
        reds = [i for i in block if re.fullmatch(r"REDG?\..*", i.opcode)]
        if len(reds) < ATOMIC_UNROLL or len(reds) % ATOMIC_UNROLL:
            problems.append(f"{label}: {len(reds)} RED in the loop body, expected a multiple of {ATOMIC_UNROLL}")
        elif len({r.operands[0] for r in reds}) != 1:
            problems.append(f"{label}: the RED of the loop use {len({r.operands[0] for r in reds})} addresses, "
                            "expected one")
    replay = _single(functions, "lane_replay_kernel")
    combined = [i.opcode for i in replay.instructions if re.fullmatch(_AGGREGATION, i.opcode)] if replay else []
    if combined:
        problems.append(f"lane_replay_kernel: ptxas combined the warp's lanes ({', '.join(combined)}), so no lane is "
                        "replayed")
    return problems


def check_calibration_sass(functions: dict[str, Function]) -> list[str]:
    """Every problem found in the SASS of the calibration harness (empty when every benchmark is intact)."""
    problems: list[str] = []
    kernels = chain_kernels(functions)
    for op in CHAIN_SPECS:
        ilps = (1,) if op in ("OpAtom", "OpSync") else (1, 2, 3)
        for ilp in ilps:
            fn = kernels.get((op, ilp))
            if fn is None:
                problems.append(f"{op} ILP {ilp}: chain kernel not found in the SASS")
                continue
            problems += check_chain(fn, op, ilp)
    problems += check_chase(_single(functions, "global_chase_kernel"), "global_chase_kernel",
                            r"LDG\..*", GLOBAL_CHASE_UNROLL)
    problems += check_chase(_single(functions, "shared_chase_kernel"), "shared_chase_kernel",
                            r"LDS(\..*)?", SMALL_CHASE_UNROLL)
    problems += check_chase(_single(functions, "const_chase_kernel"), "const_chase_kernel", r"LDC(\..*)?",
                            SMALL_CHASE_UNROLL)
    problems += check_stream(_single(functions, "global_stream_kernel"), "global_stream_kernel", r"LDG\..*", 4)
    problems += check_shared_stream(_single(functions, "shared_stream_kernel"))
    problems += check_launch_kernels(functions)
    problems += check_atomic_kernels(functions)
    return problems
