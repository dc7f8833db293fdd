"""Reading the SASS of the calibration microbenchmarks, so that what they measure is checked before a GPU runs.

A microbenchmark measures what ptxas leaves of it, not what its source says: a dependent chain that ptxas
folds (`and` with the same mask twice is one `and`; a `mov` is renamed away; a shuffle of a value every lane
already holds is dropped) runs at the cost of the loop around it. This module compiles a harness source to a
cubin for one architecture (nvcc, whose ptxas does the optimising), disassembles it with nvdisasm and parses
the instructions into functions and basic blocks with their destination and source registers, so that a check
can count the instructions of a chain and follow its dependencies, instruction by instruction.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from kerncast.analysis.calibration.errors import CalibrationError
from kerncast.analysis.toolchain import ToolchainError, find_toolchain, run_tool, tool_temp_dir

COMPILE_TIMEOUT_S = 600.0
DISASM_TIMEOUT_S = 120.0
NVDISASM_HINT = "install NVIDIA's disassembler with `pip install nvidia-cuda-nvdisasm` (Kerncast's test extra)"

_FUNCTION_RE = re.compile(r"^\s*\.text\.(?P<name>[\w$.]+):\s*$")
_LABEL_RE = re.compile(r"^\s*(?P<label>\.L\w+):\s*$")
_INSTR_RE = re.compile(r"^\s*/\*(?P<addr>[0-9a-f]{4,})\*/\s+(?P<body>.*?)\s*;\s*(?:/\*.*)?$")
_PRED_RE = re.compile(r"^@!?U?P[T0-7]\s+")
#: a general register operand (R0..R255, with an optional .64/.reuse etc. suffix); RZ is the zero register
_REG_RE = re.compile(r"(?<![\w.])R(\d{1,3})\b")
#: a predicate register operand (P0..P6, possibly negated); PT, the constant true, is no register
_PRED_OPERAND_RE = re.compile(r"^!?P([0-6])$")
#: predicates share the register numbering of the dependency analysis, above the 256 general registers
PREDICATE_BASE = 1000
_BRANCHES = ("BRA", "EXIT", "RET", "CALL", "BRX", "JMP", "BSYNC", "WARPSYNC", "BREAK")
#: opcodes that write no general register: their register operands are all read (stores, barriers...)
_NO_REGISTER_DEST = ("ST", "STG", "STS", "STL", "RED", "REDG", "BAR", "MEMBAR", "FENCE", "DEPBAR", "NOP",
                     "CCTL", "ERRBAR", "YIELD")
#: opcodes that write only predicates (their leading predicate operands), reading every register operand
_PREDICATE_DEST = ("ISETP", "FSETP", "DSETP", "HSETP2", "PLOP3", "FCHK", "VOTE")


class SassToolError(CalibrationError):
    """nvcc or nvdisasm is missing or failed; the message says which and how to install it."""


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction: opcode with its modifiers, predicate guard, written and read registers."""

    address: int
    opcode: str  # "LOP3.LUT", "SHFL.IDX", "LDS.U" ...
    guard: str  # "@P1", "@!P0" or ""
    operands: tuple[str, ...]
    dests: tuple[int, ...]  # general registers by number, predicates as PREDICATE_BASE + number
    sources: tuple[int, ...]

    @property
    def base(self) -> str:
        """The opcode without modifiers ("LOP3" for "LOP3.LUT")."""
        return self.opcode.split(".", 1)[0]


@dataclass
class Function:
    """One kernel's (or device function's) SASS, split into straight runs after each control transfer."""

    name: str
    blocks: list[list[Instruction]] = field(default_factory=list)
    #: label -> index (in `instructions`) of the instruction that follows it
    labels: dict[str, int] = field(default_factory=dict)

    @property
    def instructions(self) -> list[Instruction]:
        return [i for b in self.blocks for i in b]

    def largest_block(self, opcode_re: str) -> list[Instruction]:
        """The basic block holding the most instructions matching `opcode_re` (an unrolled loop body)."""
        pattern = re.compile(opcode_re)
        return max(self.blocks, key=lambda b: sum(1 for i in b if pattern.fullmatch(i.opcode)), default=[])


def split_operands(text: str) -> list[str]:
    """Operands split at the commas outside brackets (`desc[UR4][R2.64+0x80]` stays one operand)."""
    out, depth, current = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if "".join(current).strip():
        out.append("".join(current).strip())
    return out


def parse_instruction(address: int, body: str) -> Instruction:
    """One instruction from nvdisasm's text (`@P1 LOP3.LUT R5, R5, UR6, RZ, 0xc0, !PT`)."""
    guard = ""
    match = _PRED_RE.match(body)
    if match:
        guard = match.group(0).strip()
        body = body[match.end():]
    opcode, _, rest = body.partition(" ")
    operands = tuple(split_operands(rest))
    dests: list[int] = []
    sources: list[int] = []
    guard_pred = _PRED_OPERAND_RE.match(guard[1:]) if guard else None
    if guard_pred:
        sources.append(PREDICATE_BASE + int(guard_pred.group(1)))
    base = opcode.split(".")[0]
    writes_register = base not in _BRANCHES and not base.startswith(_NO_REGISTER_DEST) \
        and not base.startswith(_PREDICATE_DEST)
    leading = base not in _BRANCHES and not base.startswith(_NO_REGISTER_DEST)
    for op in operands:
        pred = _PRED_OPERAND_RE.match(op)
        if leading and (pred or op == "PT"):
            if pred:
                dests.append(PREDICATE_BASE + int(pred.group(1)))
            continue  # a leading predicate operand is written (ISETP P0, SHFL PT, LOP3 P0)
        leading = False
        if pred:
            sources.append(PREDICATE_BASE + int(pred.group(1)))
            continue
        regs = [int(r) for r in _REG_RE.findall(op)]
        if writes_register and regs and "[" not in op:
            dests.append(regs[0])
            writes_register = False
            continue
        sources.extend(regs)
    if guard:
        # a guarded write may not happen: the destination's earlier value flows on, so it is read too
        sources.extend(d for d in dests if d not in sources)
    return Instruction(address, opcode, guard, operands, tuple(dests), tuple(sources))


def parse_sass(text: str) -> dict[str, Function]:
    """Functions of `nvdisasm -c` output by (mangled) name."""
    functions: dict[str, Function] = {}
    current: Function | None = None
    block: list[Instruction] = []
    for line in text.splitlines():
        fn = _FUNCTION_RE.match(line)
        if fn:
            if current is not None and block:
                current.blocks.append(block)
            current = functions.setdefault(fn.group("name"), Function(fn.group("name")))
            block = []
            continue
        if current is None:
            continue
        label = _LABEL_RE.match(line)
        if label:
            current.labels[label.group("label")] = sum(len(b) for b in current.blocks) + len(block)
            # not a block boundary: nvdisasm also labels targets of the warp re-convergence paths of
            # instructions such as SHFL, which would cut a straight run of instructions into pieces
            continue
        ins = _INSTR_RE.match(line)
        if not ins:
            continue
        instruction = parse_instruction(int(ins.group("addr"), 16), ins.group("body"))
        block.append(instruction)
        if instruction.base in _BRANCHES:
            current.blocks.append(block)
            block = []
    if current is not None and block:
        current.blocks.append(block)
    return functions


#: the most instructions a slow-path call's set-up and call take (argument moves, return address, CALL)
SLOW_PATH_MAX = 8
_TARGET_RE = re.compile(r"`\((?P<label>\.L\w+)\)")


def fast_path(fn: Function) -> list[Instruction]:
    """The kernel's instructions in program order up to its first unconditional EXIT, leaving out each
    out-of-line slow path (a range holding a CALL that a guarded forward branch jumps over).

    ptxas expands an IEEE division or square root into a fast sequence and a rarely taken call of a slow
    subroutine; a dependency followed in program order through the call's argument set-up would be cut.
    """
    flat = fn.instructions
    out: list[Instruction] = []
    idx = 0
    while idx < len(flat):
        ins = flat[idx]
        out.append(ins)
        if ins.base == "EXIT" and not ins.guard:
            break
        target = _TARGET_RE.search(" ".join(ins.operands)) if ins.base == "BRA" and ins.guard else None
        end = fn.labels.get(target.group("label"), -1) if target else -1
        if idx < end <= idx + 1 + SLOW_PATH_MAX and any(f.base == "CALL" for f in flat[idx + 1:end]):
            idx = end
            continue
        idx += 1
    return out


def find_nvdisasm(nvcc: Path) -> Path:
    """nvdisasm next to nvcc (the pip wheels share one bin folder), else on PATH; SassToolError otherwise."""
    beside = nvcc.parent / nvcc.name.replace("nvcc", "nvdisasm")
    if beside.is_file():
        return beside
    found = shutil.which("nvdisasm")
    if found:
        return Path(found)
    raise SassToolError(f"nvdisasm not found next to {nvcc} nor on PATH; {NVDISASM_HINT}")


def compile_sass(source: Path, arch: str, extra: list[str] | None = None) -> dict[str, Function]:
    """Compile `source` (with the files it includes beside it) for `arch` ("sm_90") and parse its SASS."""
    try:
        toolchain = find_toolchain()
    except ToolchainError as exc:
        raise SassToolError(str(exc)) from exc
    nvdisasm = find_nvdisasm(toolchain.nvcc)
    with tool_temp_dir("kerncast-sass-") as tmp:
        cubin = tmp / f"{source.stem}.{arch}.cubin"
        args = [str(toolchain.nvcc), "-cubin", "-O3", "-std=c++17", f"-arch={arch}", "-o", str(cubin),
                str(source.resolve()), *(extra or [])]
        run = run_tool(args, COMPILE_TIMEOUT_S, cwd=source.parent.resolve(), temp_dir=tmp)
        if run.timed_out or run.returncode != 0 or not cubin.is_file():
            tail = "\n".join(run.output.strip().splitlines()[-15:])
            raise SassToolError(f"nvcc could not compile {source.name} for {arch}: {tail or 'timed out'}")
        dis = run_tool([str(nvdisasm), "-c", str(cubin)], DISASM_TIMEOUT_S, temp_dir=tmp)
        if dis.timed_out or dis.returncode != 0:
            raise SassToolError(f"nvdisasm failed on the {arch} cubin of {source.name}: "
                                f"{(dis.output.strip().splitlines() or ['timed out'])[-1]}")
    return parse_sass(dis.stdout)


def chain_links(block: list[Instruction], opcode_re: str,
                skip: set[int] | None = None) -> list[tuple[int, int | None]]:
    """For each instruction of the block matching `opcode_re`: (its index, the index of the matching
    instruction it depends on, through registers and any number of other instructions of the block, or None).

    The dependency followed is the latest earlier writer of each source register (program order within the
    block), so an instruction reading its own chain's previous result links to that result even when other
    chains' instructions are interleaved between them. Instructions whose index is in `skip` are not matched.
    """
    pattern = re.compile(opcode_re)
    skip = skip or set()
    last_writer: dict[int, int] = {}
    # for every instruction, the nearest matching instruction it (transitively) depends on
    nearest: list[int | None] = []
    links: list[tuple[int, int | None]] = []
    for idx, ins in enumerate(block):
        candidates = [last_writer[r] for r in ins.sources if r in last_writer]
        origin: int | None = None
        for writer in candidates:
            matched = pattern.fullmatch(block[writer].opcode) and writer not in skip
            found = writer if matched else nearest[writer]
            if found is not None and (origin is None or found > origin):
                origin = found
        nearest.append(origin)
        if pattern.fullmatch(ins.opcode) and idx not in skip:
            links.append((idx, origin))
        for reg in ins.dests:
            last_writer[reg] = idx
    return links


def loop_control(block: list[Instruction]) -> set[int]:
    """Indices of the instructions of a block that only decide its closing branch (the loop counter).

    The backward slice of the closing branch's guard predicate within the block: the counter update and the
    compare. They are loop overhead, not part of what a microbenchmark measures.
    """
    if not block or block[-1].base not in _BRANCHES or not block[-1].sources:
        return set()
    wanted = set(block[-1].sources)
    out: set[int] = set()
    for idx in range(len(block) - 2, -1, -1):
        ins = block[idx]
        if wanted & set(ins.dests):
            out.add(idx)
            wanted -= set(ins.dests)
            wanted |= set(ins.sources)
    return out


def chains(block: list[Instruction], opcode_re: str, skip: set[int] | None = None) -> list[list[int]]:
    """The dependent chains of matching instructions in a block, each as instruction indices in order.

    A matching instruction that depends on one already in a chain extends that chain (the first to claim a
    predecessor wins, so a predecessor feeding two instructions starts a new chain for the second).
    """
    tails: dict[int, int] = {}  # index of a chain's last instruction -> chain number
    out: list[list[int]] = []
    for idx, origin in chain_links(block, opcode_re, skip):
        if origin is not None and origin in tails:
            number = tails.pop(origin)
            out[number].append(idx)
        else:
            number = len(out)
            out.append([idx])
        tails[idx] = number
    return out
