"""The estimated gain of a performance finding is a promise about the time model's next answer: every
performance finding of the examples carries one, or says why its gain is unknown, and applying a verified
quick fix (compiled again with the real nvcc and analysed again) moves the kernel's predicted time the way and
about as far as the gain said."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from kerncast.analysis import pipeline
from kerncast.analysis.context import KernelContext
from kerncast.analysis.finding import Finding
from kerncast.analysis.findings.gpu_profile import load_gpu
from kerncast.analysis.fixing import applicable_fix, apply_edits, broken_promises
from kerncast.analysis.occupancy import compute_occupancy
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport
from kerncast.analysis.stages.gains import (
    GAINED,
    NoGain,
    gain_stage,
    gain_text,
    packed,
    raised_occupancy,
    tiled,
    time_at,
    unknown_reason,
)

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p.name for p in (REPO / "examples").glob("*.cu"))
#: the findings that are no cost of the kernel's time: information about energy, the analysis's own limits,
#: and errors (a launch that cannot run, a barrier that hangs)
NOT_PERFORMANCE = ("energy-hotspot", "unknown-access", "assumed-trip-count", "analysis-budget")
#: without LIME weights, as the server and `kerncast analyze` analyse: no time or gain depends on them
OPTIONS = AnalysisOptions(lime=False)


def _time(report: FileReport, kernel: str | None) -> float:
    """The kernel's time as the default (kerncast) model predicts it."""
    [k] = [k for k in report.kernels if k.name == kernel]
    assert k.time is not None, f"{kernel}: no predicted time"
    return k.time.models["kerncast"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_performance_finding_of_the_examples_has_a_gain(name: str) -> None:
    path = REPO / "examples" / name
    report = analyze_file(path, options=OPTIONS)
    for f in report.all_findings():
        if str(f.code) in NOT_PERFORMANCE or f.severity == "error":
            continue
        reason = unknown_reason(f.code)
        if reason is not None:  # no re-prediction prices it: said so, with no number
            assert "gain" not in f.detail, f"{name}:{f.line} {f.code}: a gain the model cannot compute"
            assert f.detail["gain_unknown"] == reason and f.message.endswith(f"gain unknown: {reason}"), f.message
            continue
        assert f.code in GAINED, f"{name}:{f.line} {f.code}: a performance finding neither priced nor unknown"
        assert "gain_unknown" not in f.detail, f"{name}:{f.line} {f.code}: {f.detail.get('gain_unknown')}"
        gain = f.detail.get("gain")
        assert gain is not None, f"{name}:{f.line} {f.code} has no gain"
        assert gain["model"] == "kerncast"
        if f.code != "launch-configuration":  # a removed cost never slows the kernel; a relaunch may
            assert gain["time_us_after"] <= gain["time_us_before"] * (1 + 1e-9), gain
        assert gain["speedup"] == pytest.approx(gain["time_us_before"] / gain["time_us_after"], rel=1e-3)
        assert gain["time_us_before"] == pytest.approx(_time(report, f.kernel)), "gain not against the shown time"
        assert f.message.endswith(gain_text(gain["speedup"])), f.message


def _fixed(path: Path, code: str, kernel: str) -> tuple[Finding, float, float]:
    """The finding's gain and the kernel's time before and after its verified fix (unsafe ones included)."""
    text = path.read_text(encoding="utf-8")
    before = analyze_file(path, options=OPTIONS)
    [finding] = [f for f in before.all_findings() if str(f.code) == code and f.kernel == kernel]
    fix = applicable_fix(finding, unsafe=True)
    assert fix is not None, f"{kernel}: no applicable fix for {code}"
    after = analyze_file(path, text=apply_edits(text, fix.edits), options=OPTIONS)
    assert broken_promises(before, after, finding, fix) == [], "the fix did not verify"
    return finding, _time(before, kernel), _time(after, kernel)


def _kept_promise(finding: Finding, before: float, after: float) -> None:
    """The time moved the way the finding's gain said, and within 2x of as far."""
    promised = finding.detail["gain"]["speedup"]
    actual = before / after
    print(f"{finding.kernel} {finding.code}: gain {promised:.3f}x promised, {actual:.3f}x after the fix "
          f"({before:.2f} -> {after:.2f} us)")
    assert 0.5 <= actual / promised <= 2.0
    if promised >= 1.02:  # a real promise: the time must drop
        assert after < before
    else:  # "buys little": the time does not move much either way
        assert actual == pytest.approx(1.0, abs=0.05)


@pytest.mark.parametrize(("file", "code", "kernel"), [
    ("examples/transpose.cu", "uncoalesced-global", "transposeNaive"),  # the tiled-transpose rewrite
    ("examples/transpose.cu", "shared-bank-conflict", "transposeTiled"),  # padding the tile
    ("tests/kernels/block2d.cu", "uncoalesced-global", "columnMajor"),  # swapping the thread indices
    ("tests/kernels/fp64_promotion.cu", "fp64-in-fp32", "halfLiteral"),  # float literals
    ("tests/kernels/fp64_promotion.cu", "fp64-in-fp32", "doubleSqrt"),  # sqrtf and a float literal
    ("tests/kernels/fp64_promotion.cu", "fp64-in-fp32", "dampedSeries"),  # a loop-carried chain in FP64
])
def test_a_verified_fix_moves_the_time_as_its_gain_promised(file: str, code: str, kernel: str) -> None:
    _kept_promise(*_fixed(REPO / file, code, kernel))


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_verified_quick_fix_of_the_examples_keeps_its_gain(name: str) -> None:
    """Each quick fix of an example that verifies (recompiled, re-analysed, its finding gone and nothing new)
    moves the kernel's time as the finding's gain said; a fix that does not verify is not offered, so it
    promises nothing."""
    path = REPO / "examples" / name
    text = path.read_text(encoding="utf-8")
    before = analyze_file(path, options=OPTIONS)
    for finding in before.all_findings():
        fix = applicable_fix(finding, unsafe=True)
        if fix is None:
            continue
        after = analyze_file(path, text=apply_edits(text, fix.edits), options=OPTIONS)
        if broken_promises(before, after, finding, fix):
            print(f"{name}:{finding.line} {finding.code}: the fix does not verify, so it is not offered")
            continue
        was, now = _time(before, finding.kernel), _time(after, finding.kernel)
        if "gain_unknown" in finding.detail:  # promised nothing: only shown
            print(f"{finding.kernel} {finding.code}: gain unknown, {was / now:.3f}x after the fix "
                  f"({was:.2f} -> {now:.2f} us)")
            continue
        assert "gain" in finding.detail, f"{name}:{finding.line} {finding.code}: a verified fix without a gain"
        _kept_promise(finding, was, now)


def test_a_kernel_without_the_cost_gets_no_gain() -> None:
    """A padded tile has no uncoalesced access or bank conflict, hence nothing of them to gain; no gain is made
    up for a finding no re-prediction prices (the energy hotspot), and its missing `__restrict__` buys nothing
    in the model (which charges the read-only path as the ordinary one on this GPU)."""
    report = analyze_file(REPO / "examples" / "transpose.cu", options=OPTIONS)
    padded = [f for f in report.all_findings() if f.kernel == "transposePadded"]
    assert {str(f.code) for f in padded} & {"uncoalesced-global", "shared-bank-conflict"} == set()
    for f in report.all_findings():
        if str(f.code) not in GAINED:
            assert "gain" not in f.detail, f"{f.code} on {f.kernel} got a gain"
        if f.code == "missing-restrict":
            assert f.detail["gain"]["speedup"] == 1.0 and "ahead of the stores" in f.detail["gain"]["basis"]


@cache
def _contexts(example: str) -> dict[str, KernelContext]:
    """The kernel contexts of an example as the gain stage sees them (its stage wrapped to keep them); each
    example is analysed once for the tests that read it."""
    kept: dict[str, KernelContext] = {}

    def keep(ctx: KernelContext) -> None:
        kept[ctx.report.name] = ctx
        gain_stage(ctx)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pipeline, "STAGES", [keep if s is gain_stage else s for s in pipeline.STAGES])
        pipeline.analyze_file(REPO / "examples" / example, options=OPTIONS)
    return kept


def test_a_tile_serves_its_loads_from_shared_memory_and_fills_once_per_block() -> None:
    """The tiling gain of the naive matrix multiply: the loads of A and B in the loop become conflict-free
    shared loads (class and access), and the tile's fill moves the share of their global requests that the
    finding counts (one in 32: each element loaded once per block row or column)."""
    ctx = _contexts("matmul.cu")["matmulNaive"]
    [finding] = [f for f in ctx.report.findings if f.code == "shared-tiling"]
    tile = tiled(ctx, finding)
    assert tile is not None
    memory, classes = tile
    assert ctx.memory is not None
    loads = {a.index: a for a in ctx.memory.accesses if a.space == "global" and a.kind == "load"}
    assert set(classes) <= set(loads) and len(classes) >= 2
    body = ctx.function.body
    for i, cls in classes.items():
        assert cls.latency == "shared" and body[i].space == "global"
    served = {a.index: a for a in memory.accesses if a.index in classes}
    assert all(a.space == "shared" and a.wavefronts == a.ideal_wavefronts == 1.0 for a in served.values())
    fills = [a for a in memory.accesses if a.index >= len(body)]
    assert len(fills) == len(classes)
    before = sum(loads[i].executions for i in classes)
    share = finding.detail["tiled_requests_per_block"] / finding.detail["requests_per_block"]
    assert sum(a.executions for a in fills) == pytest.approx(before * share, rel=1e-3)
    assert finding.detail["gain"]["time_us_after"] <= finding.detail["gain"]["time_us_before"]


def test_a_launch_gain_is_the_time_of_the_code_launched_as_it_proposes() -> None:
    """The gain of a `launch-configuration` warning re-predicts the kernel under the block and grid it names
    (the same threads along x, blocks a multiple of the warp): the analysis of the file whose launches say so
    predicts that very time. A launch whose kernel's loop count follows the block size (`treeSum`, log2 of
    blockDim steps) is priced with each thread's loops run as often as now, which its message says: the
    relaunched file whose loop keeps the 8 steps it runs as launched predicts that time."""
    path = REPO / "examples" / "loops.cu"
    text = path.read_text(encoding="utf-8")
    before = analyze_file(path, options=OPTIONS)
    found = {f.kernel: f for f in before.all_findings() if f.code == "launch-configuration"}
    assert found["treeSum"].detail["gain_launch"]["trips_held"]
    assert "loops run as often as now" in found["treeSum"].message
    assert not found["rowSum"].detail["gain_launch"]["trips_held"]
    moved = text
    for kernel, call in (("rowSum", "rowSum<<<(n + THREADS - 1) / THREADS, THREADS>>>"),
                         ("ragged", "ragged<<<n, 1>>>"), ("treeSum", "treeSum<<<1, THREADS>>>")):
        shape = found[kernel].detail["gain_launch"]
        assert shape["block"][0] % 32 == 0 and shape["block"][1:] == [1, 1]
        assert call in moved
        moved = moved.replace(call, f"{kernel}<<<{shape['grid'][0]}, {shape['block'][0]}>>>")
    # the work each thread keeps: the 8 steps of a 256-thread block, written out
    moved = moved.replace("s = blockDim.x / 2;", "s = 128u;")
    after = analyze_file(path, text=moved, options=OPTIONS)
    for kernel in ("rowSum", "ragged", "treeSum"):
        gain = found[kernel].detail["gain"]
        print(f"{kernel}: {gain['speedup']:.3f}x as {found[kernel].detail['gain_launch']}")
        assert gain["time_us_after"] == pytest.approx(_time(after, kernel), rel=1e-9)
        assert gain["time_us_before"] == pytest.approx(_time(before, kernel), rel=1e-9)
        assert not [f for f in after.all_findings() if f.kernel == kernel and f.code == "launch-configuration"
                    and "multiple of" in f.message]


def test_a_divergent_guard_is_priced_by_packing_its_passing_lanes_into_whole_warps() -> None:
    """The interleaved reduction's `tid % (2 * s) == 0` over 256 threads: at steps s = 1, 2, ..., 128 the
    passing threads are 128, 64, ..., 1. As written, a warp runs the add when any of its lanes passes: 8, 8,
    8, 8, 8, 4, 2, 1 of the 8 warps (47 of 64); packed into whole warps they fill 4, 2, 1, 1, 1, 1, 1, 1 (12 of
    64). The gain re-predicts the kernel with the second share, and the time drops."""
    ctx = _contexts("reduction.cu")["reduceInterleaved"]
    [finding] = [f for f in ctx.report.findings if f.code == "divergent-branch"]
    assert ctx.memory is not None
    fixed = packed(ctx.memory, ctx, finding)
    changed = {b: (ctx.memory.warp_share.get(b, 1.0), share) for b, share in fixed.warp_share.items()
               if share != ctx.memory.warp_share.get(b, 1.0)}
    assert changed and all(was == pytest.approx(47 / 64) and now == pytest.approx(12 / 64)
                           for was, now in changed.values()), changed
    gain = finding.detail["gain"]
    assert gain["time_us_after"] < gain["time_us_before"]


def test_a_missing_restrict_on_a_gpu_whose_l1_holds_read_only_loads_only_has_no_gain() -> None:
    """On a Pascal GPU the L1 caches global loads on the read-only path only: there `__restrict__` would buy a
    cache the time model does not price, so the finding says its gain is unknown, not 1.0."""
    report = analyze_file(REPO / "examples" / "vector_add.cu", options=AnalysisOptions(lime=False, gpu="gtx1050"))
    [f] = [f for f in report.all_findings() if f.code == "missing-restrict"]
    assert "gain" not in f.detail and "read-only path only" in f.detail["gain_unknown"], f.message


def test_warp_aggregation_moves_the_time_as_the_atomic_contention_gain_promised() -> None:
    """perBlockSum's float `atomicAdd(&blockSums[blockIdx.x], in[i])` makes 32 same-address updates per warp;
    its gain re-predicts it with one update per warp. perBlockSumByWarp is that rewrite by hand (a shuffle
    tree, then one lane's atomic): its predicted time is what the gain promised, within 2x (the shuffles are
    not charged by the gain). countAll's integer add is combined by ptxas already: it buys little."""
    report = analyze_file(REPO / "tests" / "kernels" / "atomics.cu", options=AnalysisOptions(lime=False, gpu="h100"))
    found = {f.kernel: f for f in report.all_findings() if f.code == "atomic-contention"}
    _kept_promise(found["perBlockSum"], _time(report, "perBlockSum"), _time(report, "perBlockSumByWarp"))
    assert found["perBlockSum"].detail["gain"]["speedup"] > 2.0
    assert found["countAll"].detail["gain"]["speedup"] < 1.02


def test_a_register_limited_occupancy_is_raised_by_one_block_per_sm_and_re_predicted() -> None:
    """matmulNaive's 1024-thread blocks hold 32 warps of an SM with its registers: one more block per SM needs
    at most 32 registers per thread, and the kernel re-predicted at that occupancy is no slower. The
    occupancy of a kernel its warps limit (a full SM) has no register or shared-memory fix to price."""
    ctx = _contexts("matmul.cu")["matmulNaive"]
    occ = ctx.report.occupancy
    assert occ is not None and occ.limiter == "registers" and occ.active_blocks_per_sm == 1
    raised, fit = raised_occupancy(ctx)
    assert raised.active_blocks_per_sm == 2 and fit == f"at most 32 registers per thread (now {ctx.report.registers})"
    launch = ctx.report.launch
    assert launch is not None and ctx.report.time is not None
    after = time_at(ctx, ctx.memory, launch.block_dims(), launch.grid_dims(), raised)  # type: ignore[arg-type]
    assert after <= ctx.report.time.models["kerncast"] * (1 + 1e-9)
    full = _contexts("reduction.cu")["reduceSequential"]
    with pytest.raises(NoGain, match="limited by warps"):
        raised_occupancy(full)


def test_a_partial_last_wave_is_priced_at_the_block_width_that_fills_its_waves_best() -> None:
    """scaleTail's 272 blocks of 1024 threads on an H100 (two per SM, 264 per wave) leave its third wave nearly
    empty: the gain relaunches the same threads in the warp-multiple width whose waves leave the fewest block
    slots idle, and re-predicts it."""
    report = analyze_file(REPO / "tests" / "kernels" / "launch_config.cu", options=AnalysisOptions(lime=False,
                                                                                                   gpu="h100"))
    [f] = [f for f in report.all_findings() if f.kernel == "scaleTail" and f.code == "launch-configuration"]
    shape = f.detail["gain_launch"]
    width, blocks = shape["block"][0], shape["grid"][0]
    assert width % 32 == 0 and width != 1024 and blocks == -(-272 * 1024 // width)
    assert "gain" in f.detail and f.message.endswith(gain_text(f.detail["gain"]["speedup"]))
    gpu, _ = load_gpu("h100")
    [k] = [k for k in report.kernels if k.name == "scaleTail"]
    assert gpu is not None and k.registers is not None

    def idle(w: int, n: int) -> float:
        per_wave = gpu.sm_count * compute_occupancy(gpu, w, k.registers, 0).active_blocks_per_sm
        slots = -(-n // per_wave) * per_wave
        return (slots - n) / slots

    assert idle(width, blocks) < idle(1024, 272)
