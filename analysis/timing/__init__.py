"""Kernel time without running it: the thesis scheduler, Hong & Kim's MWP-CWP and a boat-hull roofline range.

Public API::

    TimeEstimate, predict_time(cfg, loops, profile, blocks=..., threads_per_block=..., ...)
    schedule_block(dag, instructions, profile, n_threads=...) -> BlockSchedule      # thesis Algorithm 6
    schedule_cfg(...), plan_waves(...)                                               # Algorithms 7 and 8
    mwp_cwp(MwpCwpParams) -> MwpCwpResult, mwp_cwp_params(profile, counts, ...)
    roofline_range(RooflineInputs) -> (best_us, worst_us), roofline_inputs(profile, counts, threads, ...)
"""

from kerncast.analysis.timing.estimate import TimeEstimate, predict_time
from kerncast.analysis.timing.mwp_cwp import MwpCwpParams, MwpCwpResult, mwp_cwp, mwp_cwp_params
from kerncast.analysis.timing.roofline import RooflineInputs, roofline_inputs, roofline_range
from kerncast.analysis.timing.scheduler import BlockSchedule, CfgSchedule, plan_waves, schedule_block, schedule_cfg

__all__ = [
    "BlockSchedule",
    "CfgSchedule",
    "MwpCwpParams",
    "MwpCwpResult",
    "RooflineInputs",
    "TimeEstimate",
    "mwp_cwp",
    "mwp_cwp_params",
    "plan_waves",
    "predict_time",
    "roofline_inputs",
    "roofline_range",
    "schedule_block",
    "schedule_cfg",
]
