"""The pipeline's power stage: features -> power with its interval and explanation -> energy -> hotspots.

It needs the launch (grid and block), the GPU profile and the predicted time; without them the kernel is
reported without power and says why. LIME weights are optional here (`AnalysisOptions.lime`): they cost a few
hundred model evaluations, so the language server leaves them out of the save path and fills them in on demand
(`complete_lime`) when a hover or report asks for the explanation.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kerncast.analysis.loops import block_weights
from kerncast.analysis.power.energy import energy_hotspots, estimate_energy
from kerncast.analysis.power.explain import lime_contributions
from kerncast.analysis.power.features import extract_features
from kerncast.analysis.power.model import ModelsMissing, PowerPrediction, feature_row, predict_power
from kerncast.analysis.ptx.model import line_in_file
from kerncast.analysis.report import source_line_range


def _instruction_weights(ctx: Any) -> list[float]:
    """Per instruction, how often one thread runs it: the trip counts of its loops (PFEA's nLoop)."""
    trips = {h: float(s.value) for h, s in (ctx.trip_counts or {}).items() if isinstance(s.value, int | float)}
    per_block = block_weights(ctx.cfg, ctx.loops, trips)
    return [per_block.get(b, 0.0) for b in ctx.cfg.block_of]


def power_stage(ctx: Any) -> None:
    """Predict power (W, 90% interval, explanation), energy (µJ) and energy hotspots for one kernel."""
    launch, gpu, time = ctx.launch, ctx.gpu, ctx.time
    report = ctx.report
    if gpu is None or launch is None or not launch.blocks or not launch.threads_per_block:
        report.notes.append("no power prediction: the GPU profile or the launch size is unknown")
        return
    weights = _instruction_weights(ctx)
    shape = SimpleNamespace(grid=launch.grid.value, block=launch.block.value,
                            dynamic_shared_bytes=launch.dynamic_shared_bytes.value or 0)
    features = extract_features(ctx.function, ctx.module, shape, gpu, ctx.resources, weights=weights)
    try:
        pred = predict_power(features, gpu, explain=True, lime=getattr(ctx.options, "lime", True))
    except (ModelsMissing, ValueError) as exc:
        report.notes.append(f"no power prediction: {exc}")
        return
    pred.assumptions.append("loop trip counts as in the time prediction (see the launch and loops)")
    ctx.power = pred
    report.power = pred
    if time is None:
        report.notes.append("no energy: the time could not be predicted")
        return
    report.energy = estimate_energy(pred, time.us)
    threshold = ctx.options.thresholds.energy_hotspot_share
    findings = energy_hotspots(ctx.function, pred, time.us, threshold, weights=weights,
                               line_of=lambda ins: line_in_file(ins.loc, ctx.main_file), idle_w=gpu.idle_w)
    lines = ctx.cuda_source.splitlines() if ctx.cuda_source is not None else []
    for f in findings:
        f.column, f.end_column = source_line_range(lines, f.line) if lines else (1, 1000)
    report.findings.extend(findings)


def complete_lime(prediction: PowerPrediction | None) -> bool:
    """Fill in the LIME weights of a prediction made without them; True when it changed anything.

    Only LIME runs here: the prediction, its interval and its exact contributions are kept as they are.
    """
    if prediction is None or not prediction.explanation or not prediction.features or not prediction.gpu:
        return False
    if all(c.lime_watts is not None for c in prediction.explanation):
        return False
    model, _, table, _ = feature_row(prediction.features, prediction.gpu)
    lime = lime_contributions(model, table)
    for c in prediction.explanation:
        c.lime_watts = lime.get(c.feature)
    return True
