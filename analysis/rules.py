"""The rule registry: every finding Kerncast can emit, described once, as data.

A rule is what a finding's `code` names. The SARIF rule table, the README's findings table, the language
server's `codeDescription.href`, and `kerncast rules [CODE]` all read this module, so a new kind of finding
needs one `Rule` entry here and one builder that emits it (see the README's development section).

Each rule lists the fixes its builder may attach, with their applicability, in the way ruff labels its fixes:
`safe` keeps what the program computes (only layout or speed change), `unsafe` changes which thread does what
and must be reviewed, and `snippet` is a template shown as text to adapt: it is offered as a snippet action,
never as a quick fix, because applying it alone does not remove the finding.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

#: where the documentation anchors point (the README's findings table has one anchor per code)
DOCS_URL = "https://github.com/kerncast/kerncast/blob/main/README.md"

APPLICABILITIES = ("safe", "unsafe", "snippet")


class Code(StrEnum):
    """Every finding code. A `Code` is a `str`, so it compares equal to its text and serialises as it."""

    COMPILE_ERROR = "compile-error"
    COMPILE_WARNING = "compile-warning"
    PTX_SYNTAX_ERROR = "ptx-syntax-error"
    INPUT_ERROR = "input-error"
    TOOLCHAIN_MISSING = "toolchain-missing"
    GPU_PROFILE_ERROR = "gpu-profile-error"
    UNCOALESCED_GLOBAL = "uncoalesced-global"
    SHARED_BANK_CONFLICT = "shared-bank-conflict"
    DIVERGENT_BRANCH = "divergent-branch"
    UNKNOWN_ACCESS = "unknown-access"
    ENERGY_HOTSPOT = "energy-hotspot"
    LOW_OCCUPANCY = "low-occupancy"
    REGISTER_SPILL = "register-spill"
    ANALYSIS_BUDGET = "analysis-budget"


class FixKind(StrEnum):
    """Every kind of fix a rule's builder may attach to a finding."""

    PAD_SHARED_ARRAY = "pad-shared-array"
    SWAP_THREAD_INDICES = "swap-thread-indices"
    TILED_TRANSPOSE = "tiled-transpose"
    STAGE_THROUGH_SHARED = "stage-through-shared-memory"
    SEQUENTIAL_ADDRESSING = "sequential-addressing"
    SWIZZLE = "swizzle"
    USE_SOA = "use-soa"


@dataclass(frozen=True, slots=True)
class FixSpec:
    """A fix a rule may offer: its kind, its applicability (one of `APPLICABILITIES`) and what it does."""

    kind: FixKind
    applicability: str
    summary: str

    def __post_init__(self) -> None:
        if self.applicability not in APPLICABILITIES:
            raise ValueError(f"unknown applicability {self.applicability!r}")


@dataclass(frozen=True, slots=True)
class Rule:
    """One finding kind: how it is shown, why it matters, how Nsight Compute confirms it, how to fix it."""

    code: Code
    severity: str
    title: str
    explanation: str
    example: str
    remedy: str
    ncu_rule: str | None = None
    ncu_metric: str | None = None
    fixes: tuple[FixSpec, ...] = ()

    @property
    def anchor(self) -> str:
        """The README anchor of the rule's row in the findings table."""
        return self.code.value

    @property
    def href(self) -> str:
        return f"{DOCS_URL}#{self.anchor}"

    @property
    def name(self) -> str:
        """PascalCase name, as SARIF's `reportingDescriptor.name` wants it."""
        return "".join(w.capitalize() for w in self.code.value.split("-"))

    def fix(self, kind: FixKind) -> FixSpec:
        """The rule's fix of that kind; a builder attaching a fix its rule does not list is a bug."""
        for spec in self.fixes:
            if spec.kind == kind:
                return spec
        raise KeyError(f"rule {self.code.value} declares no fix {kind.value!r}")


_RULES: tuple[Rule, ...] = (
    Rule(Code.UNCOALESCED_GLOBAL, "warning", "Uncoalesced global access",
         "The lanes of a warp touch more 32-byte sectors per request than a unit-stride access of the same "
         "width would, so the memory system moves bytes nobody uses. The ideal counts the distinct bytes the "
         "warp needs; broadcasts and near-broadcasts (a few distinct addresses per warp) are never reported. "
         "Strides that depend on a parameter say when they would be coalesced (uncoalesced unless cols == 1).",
         "out[x * height + y] = in[x * height + y];  // 32 sectors per request, ideal 4 (88% excessive)",
         "Let threadIdx.x select consecutive addresses: swap the thread indices, stage the data through a "
         "shared-memory tile (a transpose is rewritten whole), or store structs as separate arrays.",
         "UncoalescedGlobalAccess", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum (per request)",
         (FixSpec(FixKind.SWAP_THREAD_INDICES, "unsafe", "exchange threadIdx.x and threadIdx.y where the "
                  "thread's coordinates are computed (a square block covers the same elements)"),
          FixSpec(FixKind.TILED_TRANSPOSE, "safe", "rewrite a naive transpose as a tiled one through a padded "
                  "shared-memory tile"),
          FixSpec(FixKind.STAGE_THROUGH_SHARED, "snippet", "a template for staging a strided access through "
                  "shared memory"),
          FixSpec(FixKind.USE_SOA, "snippet", "a template for a structure of arrays"))),
    Rule(Code.SHARED_BANK_CONFLICT, "warning", "Shared-memory bank conflict",
         "Lanes of a warp hit the same one of the 32 four-byte banks at different addresses, so the request "
         "is split into several wavefronts. Reads of one word are a broadcast, not a conflict; 64/128-bit "
         "accesses are counted in half/quarter-warp phases.",
         "tile[threadIdx.x][threadIdx.y]  // 32-way bank conflict: 32 wavefronts instead of 1",
         "Pad the array's last dimension so that a column walk spreads over all banks, or let consecutive "
         "threads access consecutive words.",
         "SharedMemoryConflicts", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
         (FixSpec(FixKind.PAD_SHARED_ARRAY, "safe", "pad the last dimension of the shared array declared in "
                  "the kernel that makes the access"),
          FixSpec(FixKind.SEQUENTIAL_ADDRESSING, "snippet", "a template for sequential addressing"),
          FixSpec(FixKind.SWIZZLE, "snippet", "a template for an XOR swizzle where no padding clears every "
                  "access of the array"))),
    Rule(Code.DIVERGENT_BRANCH, "warning", "Divergent branch",
         "A branch whose condition differs between the lanes of one warp under the block shape: the warp runs "
         "both paths. Warp-uniform conditions (blockIdx, threadIdx.x / 32, tid < s with s a multiple of 32) "
         "are not reported.",
         "if (tid % (2 * s) == 0)  // the lanes of a warp take different paths",
         "Make the condition uniform per warp (in a reduction: sequential addressing, if (tid < s)).",
         "ThreadDivergence", "smsp__thread_inst_executed_per_inst_executed.ratio"),
    Rule(Code.UNKNOWN_ACCESS, "information", "Access pattern unknown",
         "A gather or scatter through loaded indices: how the lanes spread over memory cannot be known "
         "statically. Never a warning.",
         "out[i] = in[idx[i]];",
         "Check it with ncu if it is hot.",
         "UncoalescedGlobalAccess", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
    Rule(Code.ENERGY_HOTSPOT, "information", "Energy hotspot",
         "The line with the largest share of the kernel's dynamic energy by the per-event model (energy per "
         "warp instruction, shared wavefront and L1/L2/DRAM sector), at most one per kernel, named by the events "
         "that dominate it. The hover and the report list every line.",
         "global stores: 87% of the line, 32 sectors/request; the line takes 99% of the kernel's dynamic energy",
         "Start optimising there."),
    Rule(Code.LOW_OCCUPANCY, "warning", "Low occupancy",
         "Theoretical occupancy below the threshold, with the limiting resource (registers, shared memory, "
         "block size, blocks per SM).",
         "low occupancy: 25% (16 of 64 warps per SM), limited by registers",
         "Reduce registers (__launch_bounds__, -maxrregcount), shared memory per block, or change the block "
         "size.",
         "Occupancy", "sm__maximum_warps_per_active_cycle_pct"),
    Rule(Code.REGISTER_SPILL, "warning", "Register spill",
         "ptxas spilled registers to local memory (bytes stored and loaded per thread).",
         "register spill: ptxas moved 24 bytes of stores and 24 bytes of loads to local memory",
         "Reduce register pressure or raise the register limit.",
         "MemoryL1TEXCache", "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"),
    Rule(Code.ANALYSIS_BUDGET, "information", "Analysis budget reached",
         "The memory analysis of one kernel reached its time budget (CPU seconds; default 2, kerncast analyze "
         "--budget) and stopped: the memory instructions and branches it skipped are not checked for "
         "coalescing, bank conflicts or divergence. Everything else in the report stands.",
         "memory analysis stopped at its time budget of 2 s: 1200 memory instruction(s) and branch(es) of this "
         "kernel were not analysed",
         "Raise the budget if the kernel is worth the wait."),
    Rule(Code.COMPILE_ERROR, "error", "Compile error",
         "nvcc reported an error; errors inside included headers are shown on the #include line. The file "
         "is not analysed.",
         "error: identifier \"blockDimx\" is undefined",
         "Fix the code as nvcc says."),
    Rule(Code.COMPILE_WARNING, "warning", "Compile warning",
         "nvcc reported a warning at its line and column.",
         "warning: variable \"tile\" was declared but never referenced",
         "Fix the code as nvcc says."),
    Rule(Code.PTX_SYNTAX_ERROR, "error", "PTX syntax error",
         "The PTX could not be parsed; the position of the error is given.",
         "expected an operand at line 12, column 17",
         "Check the PTX (or the compiler that wrote it)."),
    Rule(Code.INPUT_ERROR, "error", "Input error",
         "The file could not be analysed: missing, empty, binary or above the size limit.",
         "the file is empty",
         "Give a readable .cu or .ptx file below the size limit."),
    Rule(Code.TOOLCHAIN_MISSING, "error", "Toolchain missing",
         "nvcc, ptxas or the host compiler could not be found.",
         "nvcc not found",
         "Install the cuda extra or set nvccPath."),
    Rule(Code.GPU_PROFILE_ERROR, "error", "GPU profile error",
         "The GPU profile could not be loaded.",
         "unknown GPU profile 'v1000'",
         "Choose a listed profile (kerncast gpus) or fix the profile file."),
)

RULES: dict[str, Rule] = {r.code.value: r for r in _RULES}


def rule(code: str) -> Rule:
    """The rule of a code; KeyError with the known codes when there is none."""
    try:
        return RULES[str(code)]
    except KeyError:
        raise KeyError(f"unknown finding code {code!r}; known: {', '.join(RULES)}") from None


def is_code(code: str) -> bool:
    return str(code) in RULES


TABLE_BEGIN = "<!-- findings table: generated by `kerncast rules --format markdown`; do not edit -->"
TABLE_END = "<!-- end of findings table -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table() -> str:
    """The README's findings table, one row per rule, each row with the anchor its `href` points to."""
    rows = [TABLE_BEGIN, "| code | severity | what it means | what to do | Nsight Compute | fixes |",
            "| --- | --- | --- | --- | --- | --- |"]
    for r in RULES.values():
        ncu = f"rule *{r.ncu_rule}*, `{r.ncu_metric}`" if r.ncu_rule and r.ncu_metric else "—"
        fixes = "; ".join(f"`{x.kind.value}` ({x.applicability})" for x in r.fixes) or "—"
        rows.append(f"| <a id=\"{r.anchor}\"></a>`{r.code.value}` | {r.severity} | {_cell(r.explanation)} "
                    f"Example: `{_cell(r.example)}` | {_cell(r.remedy)} | {ncu} | {fixes} |")
    rows.append(TABLE_END)
    return "\n".join(rows) + "\n"


def _missing() -> list[str]:
    return [c.value for c in Code if c.value not in RULES]


if _missing():  # pragma: no cover - a registry edit that forgets a rule fails at import
    raise RuntimeError(f"codes without a rule: {_missing()}")
