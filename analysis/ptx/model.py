"""The data model of a parsed PTX module.

Plain, immutable-where-possible data classes that every later stage (CFG, memory analysis, time and power
models) reads. They carry no behaviour beyond small derived properties, so that the parser is the only place
that knows PTX syntax and the analyses only know PTX semantics.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Byte size of each PTX fundamental type (PTX ISA, section "Fundamental Types").
TYPE_BYTES: dict[str, int] = {
    "b8": 1, "s8": 1, "u8": 1, "e4m3": 1, "e5m2": 1,
    "b16": 2, "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
    "b32": 4, "s32": 4, "u32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "tf32": 4,
    "b64": 8, "s64": 8, "u64": 8, "f64": 8,
    "b128": 16,
    "pred": 1,
}

#: State spaces of PTX (PTX ISA, "State Spaces").
STATE_SPACES = ("reg", "sreg", "const", "global", "local", "param", "shared", "tex", "generic")

#: PTX's predefined run-time constants read as plain names (PTX ISA, "Predefined Identifiers"): `WARP_SZ`,
#: the threads of a warp, which is 32 on every NVIDIA GPU (`warpSize` in CUDA C++ compiles to it).
PREDEFINED_CONSTANTS = {"WARP_SZ": 32}

#: Special registers (PTX ISA, "Special Registers"); the roots of every symbolic address.
_SPECIAL_RE = re.compile(
    r"%(tid|ntid|ctaid|nctaid|laneid|warpid|nwarpid|smid|nsmid|gridid|clock|clock64|clock_hi|globaltimer\w*"
    r"|lanemask_\w+|dynamic_smem_size|total_smem_size|aggr_smem_size|reserved_smem_\w+|envreg\d+|pm\d+\w*"
    r"|cluster\w*|ncluster\w*|clusterid|nclusterid|is_explicit_cluster|cluster_ctaid|cluster_nctaid"
    r"|cluster_ctarank|cluster_nctarank|current_graph_exec)(\.[xyz])?$"
)


@dataclass(frozen=True, slots=True)
class SourceLoc:
    """A position in a source file named by a PTX `.file` directive (1-based line and column); for code
    inlined from another function, `inlined_at` is where it was called (`.loc ..., inlined_at F L C`)."""

    file: str
    line: int
    column: int = 0
    inlined_at: SourceLoc | None = None


def loc_in_file(loc: SourceLoc | None, main_file: str | None) -> SourceLoc | None:
    """`loc` when it lies in `main_file` (any file when None); for code of a header inlined into `main_file`
    (an intrinsic such as `__shfl_down_sync` or `__ldg`), the call that it was inlined at; None for other code.

    Findings, loops and hotspots are placed with this, so lines of included headers never land on the
    analysed document.
    """
    if loc is None or main_file is None or loc.file == main_file:
        return loc
    if loc.inlined_at is not None and loc.inlined_at.file == main_file:
        return loc.inlined_at
    return None


def line_in_file(loc: SourceLoc | None, main_file: str | None) -> int | None:
    """The line of `loc_in_file`, or None."""
    found = loc_in_file(loc, main_file)
    return found.line if found is not None else None


# ---------------------------------------------------------------------------------------------- operands


@dataclass(frozen=True, slots=True)
class Reg:
    """A register operand such as `%r3`, `%rd7`, `%p1`, or a special register such as `%tid.x`.

    `negated` is set for predicate sources written `!%p1`.
    """

    name: str
    negated: bool = False

    @property
    def is_special(self) -> bool:
        """True for hardware special registers (`%tid.x`, `%ctaid.y`, `%laneid`, ...)."""
        return _SPECIAL_RE.match(self.name) is not None


@dataclass(frozen=True, slots=True)
class Imm:
    """An immediate: integer or floating point (`0f3F800000` hex floats are decoded)."""

    value: int | float
    text: str


@dataclass(frozen=True, slots=True)
class Sym:
    """A symbol: a label, parameter, variable or function name (optionally negated for `!label` never)."""

    name: str


@dataclass(frozen=True, slots=True)
class Addr:
    """A memory address operand `[base+offset]`; `base` is a register or a symbol (or None for `[imm]`)."""

    base: Reg | Sym | None
    offset: int = 0


@dataclass(frozen=True, slots=True)
class Vec:
    """A vector operand `{%f1, %f2, %f3, %f4}`; items may be `_` (the sink), shown as `Sym('_')`."""

    items: tuple[Operand, ...]


@dataclass(frozen=True, slots=True)
class PredPair:
    """The `%p|%q` destination of `setp` that writes a predicate and its complement."""

    first: Reg
    second: Reg


Operand = Reg | Imm | Sym | Addr | Vec | PredPair


# ------------------------------------------------------------------------------------------ instructions


@dataclass(frozen=True, slots=True)
class Guard:
    """The predicate guard of an instruction: `@%p1` or `@!%p1`."""

    reg: str
    negated: bool = False


# Opcodes that write no register operand: their first operand is a source (or a target).
_NO_DEST = frozenset({
    "st", "red", "bra", "brx", "call", "ret", "exit", "bar", "barrier", "membar", "fence", "trap",
    "brkpt", "pmevent", "prefetch", "prefetchu", "cp", "stmatrix", "wmma.store", "sured", "sust",
    "nanosleep", "griddepcontrol", "mbarrier", "setmaxnreg", "tensormap", "discard",
    "applypriority", "createpolicy_no_dest",
})

TYPE_NAMES = frozenset(TYPE_BYTES)

#: the `mMnNkK` shape of a warp-level matrix instruction (PTX ISA, "Matrix Shape")
MATRIX_SHAPE = re.compile(r"m(\d+)n(\d+)k(\d+)")
#: threads of a warp on every CUDA GPU: those that share one matrix fragment
WARP_THREADS = 32


@dataclass(frozen=True, slots=True)
class MatrixTile:
    """The tile a `wmma.load` or `wmma.store` moves for its warp: `runs` contiguous runs (rows in row
    layout, columns in col layout) of `run_elements` elements of `element_bytes` each, a stride apart."""

    runs: int
    run_elements: int
    element_bytes: int

    @property
    def bytes(self) -> int:
        return self.runs * self.run_elements * self.element_bytes


def matrix_tile(opcode: str, modifiers: tuple[str, ...]) -> MatrixTile | None:
    """The tile of `wmma.load.{a,b,c}` / `wmma.store.d`; None for another instruction or a sub-byte type.

    Matrix A is M x K, B is K x N, C and D are M x N (PTX ISA, "Matrix multiply-accumulate operation using
    wmma instructions"); `row` lays a matrix out row by row, `col` column by column.
    """
    if opcode != "wmma" or len(modifiers) < 2 or modifiers[0] not in ("load", "store"):
        return None
    shape = next((found for found in map(MATRIX_SHAPE.fullmatch, modifiers) if found), None)
    element = TYPE_BYTES.get(_dtype(modifiers) or "", 0)
    dims = shape and {"a": (0, 2), "b": (2, 1), "c": (0, 1), "d": (0, 1)}.get(modifiers[1])
    if not (shape and dims and element):
        return None
    mnk = [int(g) for g in shape.groups()]
    rows, cols = mnk[dims[0]], mnk[dims[1]]
    return MatrixTile(*((rows, cols) if "row" in modifiers else (cols, rows)), element)


@dataclass(slots=True)
class Instruction:
    """One PTX instruction with its position in the PTX text and in the CUDA source.

    `opcode` is the base mnemonic (`ld`, `mad`, `setp`, `wmma.load` is kept as `wmma`), `modifiers` the dotted
    suffixes in order (`("global", "nc", "v4", "f32")`).
    """

    opcode: str
    modifiers: tuple[str, ...]
    operands: tuple[Operand, ...]
    guard: Guard | None
    ptx_line: int
    ptx_column: int
    loc: SourceLoc | None
    index: int = 0
    text: str = ""
    #: (registers read, registers written), worked out on first use (`registers_read`): an instruction does
    #: not change once parsed, and the dependence DAGs, the dataflow and the trip counts ask for them many
    #: times per analysis (and again for a function the parser reuses on the next save)
    register_use: tuple[tuple[str, ...], tuple[str, ...]] | None = field(default=None, repr=False, compare=False)
    #: (space, dtype, has_dest), worked out on first use of any of them: every stage asks for them, for every
    #: instruction, often several times, and they depend only on fields that do not change after parsing
    derived: tuple[str | None, str | None, bool] | None = field(default=None, repr=False, compare=False)

    @property
    def full_opcode(self) -> str:
        """The whole mnemonic as written, e.g. `ld.global.nc.v4.f32`."""
        return ".".join((self.opcode, *self.modifiers))

    def _derive(self) -> tuple[str | None, str | None, bool]:
        found = self.derived = (_space(self.opcode, self.modifiers), _dtype(self.modifiers),
                                _has_dest(self.opcode, self.modifiers, self.operands))
        return found

    @property
    def registers_read(self) -> tuple[str, ...]:
        """Registers the instruction reads: source operands, address bases and its guard predicate."""
        return (self.register_use or self._find_registers())[0]

    @property
    def registers_written(self) -> tuple[str, ...]:
        """Registers the instruction writes (its destination, each element of a vector or pair). Special
        registers (`%tid.x`) are read-only in PTX, so they never appear here."""
        return (self.register_use or self._find_registers())[1]

    def _find_registers(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        found = self.register_use = _read_and_written(self.operands, self.has_dest, self.guard)
        return found

    @property
    def space(self) -> str | None:
        """The state space named by a memory instruction, `generic` if none; None for non-memory opcodes."""
        return (self.derived or self._derive())[0]

    @property
    def dtype(self) -> str | None:
        """The last fundamental-type modifier (`f32`, `u64`, ...) or None."""
        return (self.derived or self._derive())[1]

    @property
    def vector_width(self) -> int:
        """1, 2, 4 or 8 for `.v2/.v4/.v8` vector accesses."""
        for mod in self.modifiers:
            if mod in ("v2", "v4", "v8"):
                return int(mod[1])
        return 1

    @property
    def access_bytes(self) -> int:
        """Bytes one thread moves with this load/store (type size × vector width; a thread's share of a
        `wmma` tile); 0 when unknown."""
        if self.opcode == "wmma":
            tile = matrix_tile(self.opcode, self.modifiers)
            return tile.bytes // WARP_THREADS if tile else 0
        t = self.dtype
        return TYPE_BYTES.get(t, 0) * self.vector_width if t else 0

    @property
    def has_dest(self) -> bool:
        """Whether the first operand is written by the instruction."""
        return (self.derived or self._derive())[2]

    @property
    def dests(self) -> tuple[Operand, ...]:
        """Operands written by the instruction (a vector destination counts as one operand)."""
        return self.operands[:1] if self.has_dest else ()

    @property
    def srcs(self) -> tuple[Operand, ...]:
        """Operands read by the instruction."""
        return self.operands[1:] if self.has_dest else self.operands

    @property
    def is_branch(self) -> bool:
        return self.opcode in ("bra", "brx")

    @property
    def branch_target(self) -> str | None:
        """The label a `bra` jumps to."""
        if self.opcode == "bra" and self.operands and isinstance(self.operands[0], Sym):
            return self.operands[0].name
        return None

    @property
    def is_terminator(self) -> bool:
        """Ends a basic block: branches, returns and exits."""
        return self.opcode in ("bra", "brx", "ret", "exit", "trap")

    @property
    def line(self) -> int | None:
        """The CUDA source line (from `.loc`), or None when the PTX carries no line info."""
        return self.loc.line if self.loc else None


_MEMORY_OPCODES = frozenset({"ld", "st", "atom", "red", "ldu", "prefetch", "cvta", "wmma", "ldmatrix", "stmatrix",
                             "cp", "isspacep", "mbarrier"})
_SPACES = frozenset({"global", "shared", "local", "param", "const", "tex"})


def _read_and_written(operands: tuple[Operand, ...], has_dest: bool,
                      guard: Guard | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The registers read (sources, address bases, the guard) and written (a destination that is no address).

    A destination operand is never an address (`has_dest` is false for a bracketed first operand), so the
    written names are those of the first operand when the instruction has a destination."""
    read: list[str] = []
    written: list[str] = []
    sources = operands
    if has_dest:
        _collect_regs(operands[0], written)
        sources = operands[1:]
    for op in sources:
        _collect_regs(op, read)
    if guard is not None:
        read.append(guard.reg)
    return tuple(read), tuple(written)


def _collect_regs(op: Operand, out: list[str]) -> None:
    if isinstance(op, Reg):
        out.append(op.name)
    elif isinstance(op, Addr):
        if isinstance(op.base, Reg):
            out.append(op.base.name)
    elif isinstance(op, Vec):
        for item in op.items:
            _collect_regs(item, out)
    elif isinstance(op, PredPair):
        out.extend((op.first.name, op.second.name))


def _space(opcode: str, modifiers: tuple[str, ...]) -> str | None:
    """`Instruction.space` (see there)."""
    if opcode not in _MEMORY_OPCODES:
        return None
    for mod in modifiers:
        base = mod.split("::", 1)[0]  # shared::cta, shared::cluster, param::entry
        if base in _SPACES:
            return base
    return "generic"


def _dtype(modifiers: tuple[str, ...]) -> str | None:
    """`Instruction.dtype` (see there)."""
    for mod in reversed(modifiers):
        if mod in TYPE_NAMES:
            return mod
    return None


def _has_dest(opcode: str, modifiers: tuple[str, ...], operands: tuple[Operand, ...]) -> bool:
    """`Instruction.has_dest` (see there)."""
    if opcode in _NO_DEST and opcode != "mbarrier" or (opcode == "wmma" and "store" in modifiers):
        return False
    # a first operand in brackets is memory written (st, sust, mbarrier.init, cp.async), never a register
    return bool(operands) and not isinstance(operands[0], Addr)


# ------------------------------------------------------------------------------------------ declarations


def array_bytes(type_name: str, dims: tuple[int, ...]) -> int:
    """Bytes of a variable of a fundamental type with array dimensions (an unsized `[]` counts as 0)."""
    n = TYPE_BYTES.get(type_name, 0)
    for d in dims:
        n *= d
    return n


@dataclass(frozen=True, slots=True)
class Param:
    """A kernel or function parameter: `.param .u64 .ptr .align 8 _Z3fooPf_param_0`."""

    name: str
    type: str
    align: int | None = None
    array: tuple[int, ...] = ()
    ptr_space: str | None = None

    @property
    def size_bytes(self) -> int:
        return array_bytes(self.type, self.array)


@dataclass(frozen=True, slots=True)
class VarDecl:
    """A variable declaration in a state space (`.reg`, `.shared`, `.local`, `.const`, `.global`).

    `count` is N for the `%r<N>` register-range form; `array` holds the array dimensions (`[]` unsized is
    `(0,)`); `extern` marks `.extern .shared` dynamic shared memory; `attributes` holds the names of a
    `.attribute(...)` list (`managed` for a `__managed__` variable, which lives in global memory).
    """

    name: str
    space: str
    type: str
    align: int | None = None
    array: tuple[int, ...] = ()
    count: int = 1
    extern: bool = False
    ptx_line: int = 0
    initializer: str | None = None
    attributes: tuple[str, ...] = ()

    @property
    def size_bytes(self) -> int:
        """Bytes of one variable (for a register range: of each register)."""
        return array_bytes(self.type, self.array)


@dataclass(slots=True)
class Function:
    """A `.entry` kernel or a `.func` device function."""

    name: str
    kind: str  # "entry" or "func"
    params: list[Param]
    return_params: list[Param]
    decls: list[VarDecl]
    body: list[Instruction]
    labels: dict[str, int]  # label -> index in `body` of the instruction that follows it
    directives: dict[str, tuple[int, ...]]  # .maxntid / .reqntid / .minnctapersm / .maxnreg / ...
    pragmas: list[str]
    ptx_line: int
    linkage: str | None = None  # .visible / .extern / .weak
    has_body: bool = True
    demangled: str | None = None

    @property
    def is_kernel(self) -> bool:
        return self.kind == "entry"

    @property
    def display_name(self) -> str:
        """The demangled name with template arguments and no parameter list, else the PTX name."""
        return self.demangled or self.name

    @property
    def static_shared_bytes(self) -> int:
        """Bytes of statically sized `.shared` variables declared in this function."""
        return sum(d.size_bytes for d in self.decls if d.space == "shared" and not d.extern)

    @property
    def source_line(self) -> int | None:
        """The first CUDA source line of the function's instructions (its `.loc`), if known."""
        lines = [i.loc.line for i in self.body if i.loc is not None]
        return min(lines) if lines else None


@dataclass(frozen=True, slots=True)
class FunctionError:
    """A syntax error that stopped one function (`name` None when it came before the name was read)."""

    name: str | None
    function_line: int
    line: int
    column: int
    message: str


@dataclass(slots=True)
class Module:
    """A whole PTX module: header directives, source files, module-scope variables and functions."""

    version: str | None
    target: tuple[str, ...]
    address_size: int
    files: dict[int, str]
    globals: list[VarDecl]
    functions: list[Function]
    source_path: str | None = None
    extra: dict[str, str] = field(default_factory=dict)
    errors: list[FunctionError] = field(default_factory=list)  # functions skipped for a syntax error

    @property
    def kernels(self) -> list[Function]:
        """The `.entry` functions that have a body."""
        return [f for f in self.functions if f.is_kernel and f.has_body]

    def function(self, name: str) -> Function | None:
        """Look a function up by PTX (mangled) or display name."""
        for f in self.functions:
            if f.name == name or f.display_name == name:
                return f
        return None

    def extern_shared(self) -> list[VarDecl]:
        """Module-scope `.extern .shared` arrays: dynamic shared memory sized at launch."""
        return [d for d in self.globals if d.space == "shared" and d.extern]
