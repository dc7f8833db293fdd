"""The `divergent-branch` finding: a branch whose condition splits the lanes of a warp, with the share of the
sampled warp executions that split.
"""

from __future__ import annotations

from typing import Any

from kerncast.analysis.finding import Finding
from kerncast.analysis.findings.memory_place import fmt_count
from kerncast.analysis.memory.analysis import BranchInfo, WarpFacts
from kerncast.analysis.rules import Code


def divergent(k: WarpFacts, b: BranchInfo, loc: tuple[int, int, int, str], shape: Any) -> Finding:
    line, col, end, prefix = loc
    dep = " and ".join(b.depends_on) or "per-lane data"
    share = (b.share or 0) * 100
    msg = (f"{prefix}divergent branch: condition depends on {dep}; the lanes of a warp take different paths in "
           f"{share:.0f}% of the sampled warp executions")
    if b.executions > 1:
        msg += f" (runs {fmt_count(b.executions)} times per thread)"
    detail = {"divergent_share": round(b.share or 0, 3), "depends_on": b.depends_on, "condition": b.condition,
              "executions": b.executions, "assumed_block": shape,
              "ncu_metric": "smsp__thread_inst_executed_per_inst_executed.ratio"}
    return Finding(Code.DIVERGENT_BRANCH, "warning", line, col, line, end, msg, detail=detail,
                   kernel=k.kernel)
