"""The rule registry: every finding Kerncast can emit, described once, as data.

A rule is what a finding's `code` names. The codes and fix kinds are enums here; each rule's texts (severity,
title, explanation, example, remedy, Nsight Compute rule and metric, fixes) are a `[[rule]]` of
`data/rules.toml`, read once at import. The SARIF rule table, the README's findings table, the language
server's `codeDescription.href`, and `kerncast rules [CODE]` all read this module, so a new kind of finding
needs one `Code` member here, one `[[rule]]` there and one builder that emits it (see the README's
development section).

Each rule lists the fixes its builder may attach, with their applicability, in the way ruff labels its fixes:
`safe` keeps what the program computes (only layout or speed change), `unsafe` changes which thread does what
and must be reviewed, and `snippet` is a template shown as text to adapt: it is offered as a snippet action,
never as a quick fix, because applying it alone does not remove the finding.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources

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
    LAUNCH_CONFIGURATION = "launch-configuration"
    BARRIER_DIVERGENCE = "barrier-divergence"
    LOCAL_MEMORY = "local-memory"
    FP64_IN_FP32 = "fp64-in-fp32"
    SLOW_INTEGER_DIVISION = "slow-integer-division"
    ATOMIC_CONTENTION = "atomic-contention"
    MISSING_RESTRICT = "missing-restrict"
    SHARED_TILING = "shared-tiling"
    ANALYSIS_BUDGET = "analysis-budget"
    ASSUMED_TRIP_COUNT = "assumed-trip-count"


class FixKind(StrEnum):
    """Every kind of fix a rule's builder may attach to a finding."""

    PAD_SHARED_ARRAY = "pad-shared-array"
    SWAP_THREAD_INDICES = "swap-thread-indices"
    TILED_TRANSPOSE = "tiled-transpose"
    STAGE_THROUGH_SHARED = "stage-through-shared-memory"
    SEQUENTIAL_ADDRESSING = "sequential-addressing"
    SWIZZLE = "swizzle"
    USE_SOA = "use-soa"
    USE_REPLACEMENT_API = "use-replacement-api"
    ADD_INCLUDE = "add-include"
    FLOAT_LITERALS = "float-literals"
    ANNOTATE_LOOP_COUNT = "annotate-loop-count"
    WARP_AGGREGATION = "warp-aggregation"
    ADD_RESTRICT = "add-restrict"
    TILED_MATMUL = "tiled-matmul"
    TILED_STENCIL = "tiled-stencil"
    SHARED_TILE = "shared-tile"


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
    #: the module of `analysis/findings/` that builds the rule's findings and fixes (`findings/<family>.py`)
    family: str = ""

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


def _load_rules() -> tuple[Rule, ...]:
    """The rules of `data/rules.toml`, in its order (the order of `kerncast rules` and the README table)."""
    text = resources.files("kerncast.analysis").joinpath("data/rules.toml").read_text(encoding="utf-8")
    return tuple(
        Rule(Code(r["code"]), r["severity"], r["title"], r["explanation"], r["example"], r["remedy"],
             r.get("ncu_rule"), r.get("ncu_metric"),
             tuple(FixSpec(FixKind(f["kind"]), f["applicability"], f["summary"]) for f in r.get("fix", ())),
             r["family"])
        for r in tomllib.loads(text)["rule"])


_RULES: tuple[Rule, ...] = _load_rules()

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
