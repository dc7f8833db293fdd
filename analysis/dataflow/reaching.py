"""Reaching definitions: which instructions may have written a register when control reaches a point.

PTX from nvcc is not in SSA form (a loop counter is one register rewritten in the body), so a register's
value at an instruction is decided by the definitions that reach it along the CFG. They are computed once per
kernel by iterative data flow over bit sets of instruction indices (Python ints: one bit per instruction);
loop entry values (`values`) and induction variables (`induction`) are queries on them.
"""

from __future__ import annotations

from kerncast.analysis.cfg import Cfg
from kerncast.analysis.ptx.model import Addr, Function, Instruction, Reg, Sym

#: instructions whose result is a value read from memory or from another lane: an address built from one of
#: them is an indirection (a gather), whatever arithmetic follows
LOADED = frozenset({"ld", "ldu", "atom", "shfl", "tex", "tld4", "suld", "call", "ldmatrix", "vote", "redux", "match"})


def definitions(fn: Function) -> dict[str, list[Instruction]]:
    """Every instruction that writes each register, in program order."""
    defs: dict[str, list[Instruction]] = {}
    for ins in fn.body:
        for name in dict.fromkeys(ins.registers_written):
            defs.setdefault(name, []).append(ins)
    return defs


class ReachingDefs:
    """Which definitions reach each block entry (iterative data flow over bit sets of instruction indices)."""

    def __init__(self, fn: Function, cfg: Cfg, defs: dict[str, list[Instruction]]) -> None:
        self.fn, self.cfg = fn, cfg
        self._params = frozenset(p.name for p in fn.params)
        self.mask = {reg: sum(1 << i.index for i in ins) for reg, ins in defs.items()}
        n = len(cfg.blocks)
        gen, kill = [0] * n, [0] * n
        for b in range(n):
            for ins in cfg.instructions(b):
                for reg in set(ins.registers_written):
                    kill[b] |= self.mask[reg]
                    gen[b] = (gen[b] & ~self.mask[reg]) | (1 << ins.index)
        self.reach_in, self.reach_out = [0] * n, list(gen)
        order = cfg.rpo or list(range(n))
        changed = True
        while changed:
            changed = False
            for b in order:
                inn = 0
                for p in cfg.blocks[b].preds:
                    inn |= self.reach_out[p]
                out = gen[b] | (inn & ~kill[b])
                if inn != self.reach_in[b] or out != self.reach_out[b]:
                    self.reach_in[b], self.reach_out[b] = inn, out
                    changed = True

    def _instructions(self, bits: int) -> list[Instruction]:
        out = []
        while bits:
            low = bits & -bits
            out.append(self.fn.body[low.bit_length() - 1])
            bits ^= low
        return out

    def at(self, reg: str, ins: Instruction) -> list[Instruction]:
        """The definitions of `reg` that reach instruction `ins`."""
        block = self.cfg.block_of[ins.index]
        for prev in reversed(self.fn.body[self.cfg.blocks[block].start:ins.index]):
            if reg in prev.registers_written:
                return [prev]
        return self._instructions(self.reach_in[block] & self.mask.get(reg, 0))

    def entering(self, reg: str, header: int, in_loop: set[int] | frozenset[int]) -> list[Instruction]:
        """The definitions of `reg` that reach the loop header from outside the loop."""
        bits = 0
        for p in self.cfg.blocks[header].preds:
            if p not in in_loop:
                bits |= self.reach_out[p]
        return self._instructions(bits & self.mask.get(reg, 0))

    def _kernel_parameter(self, load: Instruction) -> bool:
        """Whether an `ld.param` reads one of the kernel's own parameters, not a called function's return
        value (`ld.param.b32 r, [retval0+8]`, the quadrant `sin` hands back from its slow path: a call result)."""
        addr = next((o for o in load.operands if isinstance(o, Addr)), None)
        return addr is not None and isinstance(addr.base, Sym) and addr.base.name in self._params

    def loaded_into(self, ins: Instruction) -> bool:
        """Whether the address of memory instruction `ins` is computed from a loaded (or exchanged) value: the
        backward slice of its address register over these definitions meets a load, atomic, shuffle or call
        result (a kernel parameter's load does not count). An unknown address without one is not a gather."""
        addr = next((o for o in ins.operands if isinstance(o, Addr)), None)
        if addr is None or not isinstance(addr.base, Reg) or addr.base.is_special:
            return False
        seen: set[int] = set()
        work = [(addr.base.name, ins)]
        while work:
            reg, at = work.pop()
            for d in self.at(reg, at):
                if d.index in seen:
                    continue
                seen.add(d.index)
                if d.opcode in LOADED and not (d.opcode == "ld" and d.space == "param" and self._kernel_parameter(d)):
                    return True
                for src in d.srcs:
                    base = src.base if isinstance(src, Addr) else src
                    if isinstance(base, Reg) and not base.is_special:
                        work.append((base.name, d))
        return False
