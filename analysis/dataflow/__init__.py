"""The PTX dataflow layer: one set of facts about a kernel's registers, computed once and queried by all.

PTX from nvcc is not in SSA form, so every question about a register's value (how many times does this loop
run, which byte does this lane load, which lanes take this branch) is a data-flow question. This package
answers them all from the same facts, so that a trip count, an address and a branch condition can never
disagree about what a register holds:

- `reaching`: the definitions that reach each point (iterative bit-set data flow);
- `symbolic` (over `expr`'s polynomials): each register's value as a polynomial in the thread and block
  indices, the parameters and the loops' iteration numbers; memory addresses and branch predicates;
- `induction`: loop induction variables, as the instruction that moves them and as closed-form recurrences;
- `values`: concrete values at a loop's entry under the launch's known sizes and parameters.

Integer operations everywhere follow `intops` (bit width and signedness honoured). `KernelDataflow` holds a
kernel's facts, each computed on first use: the launch stage reads trip counts from the reaching definitions
and the memory stage reads addresses and branch conditions from the symbolic values of the same object.
"""

from __future__ import annotations

from kerncast.analysis.cfg import Cfg
from kerncast.analysis.dataflow.reaching import ReachingDefs, definitions
from kerncast.analysis.dataflow.symbolic import SymbolicResult, analyze_symbolic
from kerncast.analysis.loops import LoopForest
from kerncast.analysis.ptx.model import Function, Instruction

__all__ = ["ODD_PTX_ERRORS", "KernelDataflow"]

#: what reading odd PTX (a mutated or hand-written kernel) may raise in these passes: a stage that asks them
#: turns it into "unknown" with the reason instead of failing the file. The trip counts ask the symbolic
#: values too (a halving copied back), so they and the memory analysis catch the same errors.
ODD_PTX_ERRORS: tuple[type[BaseException], ...] = (ArithmeticError, ValueError, TypeError, KeyError, IndexError,
                                                  RecursionError)


class KernelDataflow:
    """The dataflow facts of one kernel, each computed once, on first use."""

    __slots__ = ("function", "cfg", "loops", "_defs", "_reaching", "_symbolic")

    def __init__(self, function: Function, cfg: Cfg, loops: LoopForest) -> None:
        self.function, self.cfg, self.loops = function, cfg, loops
        self._defs: dict[str, list[Instruction]] | None = None
        self._reaching: ReachingDefs | None = None
        self._symbolic: SymbolicResult | None = None

    @property
    def definitions(self) -> dict[str, list[Instruction]]:
        """Every instruction that writes each register."""
        if self._defs is None:
            self._defs = definitions(self.function)
        return self._defs

    @property
    def reaching(self) -> ReachingDefs:
        """The definitions reaching each block entry."""
        if self._reaching is None:
            self._reaching = ReachingDefs(self.function, self.cfg, self.definitions)
        return self._reaching

    @property
    def symbolic(self) -> SymbolicResult:
        """Symbolic register values: memory addresses, guards and branch predicates, loop recurrences."""
        if self._symbolic is None:
            self._symbolic = analyze_symbolic(self.cfg, self.loops)
        return self._symbolic
