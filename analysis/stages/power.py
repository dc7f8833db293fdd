"""The pipeline's power stage: features and per-event energy per kernel, then one batched power prediction.

`power_stage` runs per kernel: it extracts the statistical model's features, computes the per-event energy
split (events.py) and turns its top line into the kernel's `energy-hotspot` finding. `finish_power` runs once
per file, after every kernel's stages: it predicts the power of all kernels in one batched call per model
(model.py), then each kernel's board energy and its interval. Kernels without a known launch, GPU or time are
reported without power, energy or hotspots, and say why. The power explanation is optional
(`AnalysisOptions.power_explanation`, `AnalysisOptions.lime`): the exact contributions cost about as much as the
rest of the power stage and LIME a few hundred model evaluations, so the language server leaves both out of the
save path and fills them in on demand (`complete_explanation`) when a hover or report asks for the explanation.
"""

from __future__ import annotations

import math
import threading

from kerncast.analysis.context import KernelContext
from kerncast.analysis.finding import source_line_range, source_lines
from kerncast.analysis.findings.energy import energy_hotspots
from kerncast.analysis.gpus import GpuProfile
from kerncast.analysis.launch import Launch
from kerncast.analysis.loops import block_weights
from kerncast.analysis.lru import BoundedLru
from kerncast.analysis.power.combine import combine, events_only
from kerncast.analysis.power.energy import estimate_energy
from kerncast.analysis.power.events import EnergyConstantsError, EventEnergy, event_energy, load_constants
from kerncast.analysis.power.explain import lime_contributions
from kerncast.analysis.power.features import LaunchShape, extract_features
from kerncast.analysis.power.inputs import PowerInputs
from kerncast.analysis.power.model import ModelsMissing, explanation_of, feature_row, predict_powers
from kerncast.analysis.power.physics import EventPower, event_power
from kerncast.analysis.power.results import PowerPrediction
from kerncast.analysis.ptx.model import line_in_file
from kerncast.analysis.tripcount import trip_values

WARP = 32


def _instruction_weights(ctx: KernelContext, dead: frozenset[int] = frozenset()) -> list[float]:
    """Per instruction, how often one thread runs it: the trip counts of its loops (PFEA's nLoop), 0 in `dead`
    blocks (those the launch never reaches)."""
    per_block = block_weights(ctx.cfg, ctx.loops, trip_values(ctx.trip_counts), dead)
    return [per_block.get(b, 0.0) for b in ctx.cfg.block_of]


def _event_energy(ctx: KernelContext, launch: Launch, gpu: GpuProfile, weights: list[float]) -> EventEnergy | None:
    if ctx.report.time is None:
        ctx.report.notes.append("no energy split: the time could not be predicted")
        return None
    try:
        constants = load_constants(gpu.arch)
    except EnergyConstantsError as exc:
        ctx.report.notes.append(f"no energy split: {exc}")
        return None
    warps = launch.blocks * math.ceil(launch.threads_per_block / WARP)
    accesses = {a.index: a for a in (ctx.memory.accesses if ctx.memory is not None else [])}
    return event_energy(ctx.function, weights, warps, accesses, gpu, float(ctx.report.time.us),
                        lambda ins: line_in_file(ins.loc, ctx.main_file), constants)


def _event_power(ctx: KernelContext, launch: Launch, gpu: GpuProfile, event: EventEnergy | None) -> EventPower | None:
    """The event model's power, when the per-event energy, the time and the occupancy are known."""
    occ, time = ctx.report.occupancy, ctx.report.time
    if event is None or time is None or occ is None or time.us <= 0:
        return None
    dram = time.detail.get("dram_bytes") if ctx.memory is not None else None
    power = event_power(event, gpu, time, launch.blocks, occ.active_blocks_per_sm,
                        math.ceil(launch.threads_per_block / WARP), float(dram) if dram is not None else None)
    # the energy split's constant part is the event power model's static power, so that both say the same
    event.set_static(power.static_w, float(time.us),
                     f"constant power: the {power.static_w:.0f} W static power of the busy SMs (the event power "
                     f"model) and idle {gpu.idle_w:g} W over the predicted {float(time.us):.3g} µs")
    return power


def power_stage(ctx: KernelContext) -> None:
    """Features and per-event energy of one kernel, and its energy-hotspot finding (power comes later)."""
    launch, gpu = ctx.report.launch, ctx.gpu
    report = ctx.report
    if gpu is None or launch is None or not launch.blocks or not launch.threads_per_block:
        report.notes.append("no power prediction: the GPU profile or the launch size is unknown")
        return
    weights = _instruction_weights(ctx)
    shape = LaunchShape(launch.grid.value, launch.block.value, launch.dynamic_shared)
    # the statistical model's features count as its training data's did (every block); the events the launch
    # runs leave out the blocks it never reaches, as the time model does
    features = extract_features(ctx.function, ctx.module, shape, gpu, ctx.report.resources, weights=weights)
    dead = ctx.memory.dead_blocks if ctx.memory is not None else frozenset()
    event = _event_energy(ctx, launch, gpu, _instruction_weights(ctx, dead) if dead else weights)
    ctx.power_inputs = PowerInputs(features, event, _event_power(ctx, launch, gpu, event))
    if event is None:
        return
    findings = energy_hotspots(event, ctx.function.display_name, ctx.options.thresholds.energy_hotspot_share)
    lines = source_lines(ctx.cuda_source) if ctx.cuda_source is not None else ()
    for f in findings:
        f.column, f.end_column = source_line_range(lines, f.line) if lines else (1, 1000)
    report.findings.extend(findings)


def finish_power(contexts: list[KernelContext], memo: PowerMemo | None = None) -> None:
    """Predict the power of every kernel of a file in one batched call, then each kernel's board energy.

    With a `memo` (a long-lived caller's), a kernel whose features were predicted before on the same GPU takes
    a copy of that prediction: the prediction is a function of the features and the shipped model alone."""
    pending = [c for c in contexts if c.power_inputs is not None and c.gpu is not None]
    if not pending:
        return
    explain = bool(pending[0].options.power_explanation)
    lime = explain and bool(pending[0].options.lime)
    try:
        preds = _predict(pending, explain, lime, memo)
    except (ModelsMissing, ValueError) as exc:
        for c in pending:
            _events_alone(c, f"no statistical power prediction: {exc}")
        return
    for ctx, pred in zip(pending, preds, strict=True):
        inputs = ctx.power_inputs
        assert inputs is not None
        pred.assumptions.append("loop trip counts as in the time prediction (see the launch and loops)")
        gpu = ctx.gpu
        assert gpu is not None
        ctx.report.power = combine(pred, inputs.power, ctx.options.power_model, gpu.idle_w, gpu.tdp_w)
        if ctx.report.time is None:
            ctx.report.notes.append("no energy: the time could not be predicted")
            continue
        ctx.report.energy = estimate_energy(pred, ctx.report.time, inputs.event)


def _events_alone(ctx: KernelContext, why: str) -> None:
    """The kernel's power from the event model alone, when the statistical model cannot answer (no shipped
    models, or features it cannot take); without the event model either, no power and the note says why."""
    inputs, gpu, time = ctx.power_inputs, ctx.gpu, ctx.report.time
    ctx.report.notes.append(why)
    if inputs is None or inputs.power is None or gpu is None or time is None:
        ctx.power_inputs = None
        return
    ctx.report.power = events_only(inputs.power, gpu.id, why)
    ctx.report.energy = estimate_energy(ctx.report.power, time, inputs.event)


class PowerMemo(BoundedLru[str, PowerPrediction]):
    """Power predictions by GPU, LIME flag and feature values: a bounded LRU, safe to share between threads.

    It keeps and hands out copies, because a kernel's prediction is changed in place later (`complete_explanation`
    fills in LIME weights); `hits` counts the predictions it answered.
    """

    def __init__(self, max_entries: int = 512) -> None:
        super().__init__(max_entries)
        self.hits = 0
        self._hits_lock = threading.Lock()

    def get(self, key: str) -> PowerPrediction | None:
        found = super().get(key)
        if found is None:
            return None
        with self._hits_lock:
            self.hits += 1
        return found.copy()

    def put(self, key: str, prediction: PowerPrediction) -> None:
        super().put(key, prediction.copy())


def _predict(pending: list[KernelContext], explain: bool, lime: bool,
             memo: PowerMemo | None) -> list[PowerPrediction]:
    """Every pending kernel's prediction, those the memo does not hold in one batched call."""
    rows = [(c.power_inputs.features, c.gpu) for c in pending if c.power_inputs is not None]
    if memo is None:
        return predict_powers(rows, explain=explain, lime=lime)
    gpus: dict[int, str] = {}  # each distinct profile's repr once (a profile's repr is long, and is the same
    for _, g in rows:           # object for every kernel of a file)
        if id(g) not in gpus:
            gpus[id(g)] = repr(g)
    keys = [repr((gpus[id(g)], explain, lime, sorted(f.items()))) for f, g in rows]
    out = [memo.get(k) for k in keys]
    todo = [i for i, p in enumerate(out) if p is None]
    if todo:
        for i, pred in zip(todo, predict_powers([rows[i] for i in todo], explain=explain, lime=lime), strict=True):
            memo.put(keys[i], pred)
            out[i] = pred
    return out  # type: ignore[return-value]


def complete_explanation(prediction: PowerPrediction | None) -> bool:
    """Fill in the exact contributions and the LIME weights of a prediction made without them; True when it
    changed anything.

    The prediction and its interval are kept as they are: only the explanation of that number is added.
    """
    if prediction is None or not prediction.explanation_incomplete():
        return False
    if not prediction.explained:  # both at once, from one feature table
        prediction.base_watts, prediction.explanation = explanation_of(prediction.features, prediction.gpu, True)
        prediction.explained = True
        return True
    model, _, table, _ = feature_row(prediction.features, prediction.gpu)
    lime = lime_contributions(model, table)
    for c in prediction.explanation:
        c.lime_watts = lime.get(c.feature)
    return True
