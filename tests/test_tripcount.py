"""Loop trip counts on PTX that nvcc compiled from small kernels, and their fallbacks."""

from __future__ import annotations

import re
from pathlib import Path

import kerncast.analysis.dataflow as dataflow_package
import pytest
from kerncast.analysis.cexpr import Unknown
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.dataflow import KernelDataflow
from kerncast.analysis.demangle import demangle, display_name
from kerncast.analysis.launch import LaunchOverrides, infer_launch
from kerncast.analysis.loops import find_loops
from kerncast.analysis.ptx import parse_ptx
from kerncast.analysis.tripcount import (
    _exit_test,
    _loop_list,
    _ReadOnce,
    _samples,
    trip_count_assumptions,
    trip_counts,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

KERNELS = r"""
__global__ void stepped(float *a)
{
    float s = 0.0f;
#pragma unroll 1
    for (int k = 3; k <= 100; k += 4) {
        s += a[k];
    }
    a[threadIdx.x] = s;
}

__global__ void countdown(float *a, int n)
{
    float s = 0.0f;
#pragma unroll 1
    for (int k = n; k > 0; k -= 3) {
        s += a[k];
    }
    a[threadIdx.x] = s;
}

__global__ void halving(float *a, unsigned int n)
{
    float s = 0.0f;
#pragma unroll 1
    for (unsigned int k = n; k > 0; k >>= 1) {
        s += a[k];
    }
    a[threadIdx.x] = s;
}

__global__ void nested(float *a, int rows)
{
    float s = 0.0f;
#pragma unroll 1
    for (int r = 0; r < rows; ++r) {
#pragma unroll 1
        for (int c = 0; c < 16; ++c) {
            s += a[r * 16 + c];
        }
    }
    a[threadIdx.x] = s;
}

__global__ void early(float *a, int n)
{
    float s = 0.0f;
#pragma unroll 1
    for (int k = 0; k < n; ++k) {
        if (a[k] < 0.0f) break;
        s += a[k];
    }
    a[threadIdx.x] = s;
}

__global__ void halfThenHalving(float *a, int n)
{
    float s = 0.0f;
#pragma unroll 1
    for (int k = n / 2; k > 0; k /= 2) {
        s += a[k];
    }
    a[threadIdx.x] = s;
}

__global__ void warpShuffleSum(float *a)
{
    float v = a[threadIdx.x];
    for (int offset = warpSize / 2; offset > 0; offset /= 2) {
        v += __shfl_down_sync(0xffffffff, v, offset);
    }
    a[threadIdx.x] = v;
}

__global__ void warpShuffleQuarters(float *a)
{
    float v = a[threadIdx.x];
    for (int offset = warpSize / 4; offset > 0; offset /= 4) {
        v += __shfl_down_sync(0xffffffff, v, offset);
    }
    a[threadIdx.x] = v;
}

__global__ void quadratic(float *a)
{
    float s = 0.0f;
#pragma unroll 1
    for (int k = 0; k < (int)(threadIdx.x * threadIdx.x); ++k) {
        s += a[k];
    }
    a[threadIdx.x] = s;
}

__global__ void quadraticPerBlock(float *a)
{
    float s = 0.0f;
#pragma unroll 1
    for (int k = 0; k < (int)(threadIdx.x * threadIdx.x + blockIdx.x * blockIdx.x); ++k) {
        s += a[k];
    }
    a[threadIdx.x] = s;
}

__global__ void triangle(float *a, int n)
{
    float s = 0.0f;
#pragma unroll 1
    for (int k = blockIdx.x; k < n; ++k) {
        s += a[k];
    }
    a[threadIdx.x] = s;
}
"""


def _module(toolchain, path: Path):
    result = compile_cuda(path, options=CompileOptions(arch="sm_80"))
    assert result.ok, result.diagnostics
    return parse_ptx(result.ptx)


@pytest.fixture(scope="module")
def loops_example(nvcc_available):
    return _module(nvcc_available, EXAMPLES / "loops.cu")


@pytest.fixture(scope="module")
def small_kernels_ptx(nvcc_available, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("tripcount") / "kernels.cu"
    path.write_text(KERNELS)
    result = compile_cuda(path, options=CompileOptions(arch="sm_80"))
    assert result.ok, result.diagnostics
    return result.ptx


@pytest.fixture(scope="module")
def small_kernels(small_kernels_ptx):
    return parse_ptx(small_kernels_ptx), KERNELS


def _counts(module, name: str, source: str | None, overrides=None):
    fn = next(f for f in module.kernels if name in f.name)
    cfg = build_cfg(fn)
    forest = find_loops(cfg)
    launch = infer_launch(name, source, overrides)
    return trip_counts(fn, cfg, forest, launch), forest


def test_constant_bound(loops_example):
    counts, _ = _counts(loops_example, "fixedSum", (EXAMPLES / "loops.cu").read_text())
    (count,) = counts.values()
    assert (count.value, count.source, count.line) == (32, "ptx", 12)
    assert "!= 32" in count.detail or "< 32" in count.detail


def test_bound_from_a_parameter_known_at_the_launch(loops_example):
    counts, _ = _counts(loops_example, "rowSum", (EXAMPLES / "loops.cu").read_text())
    (count,) = counts.values()
    assert (count.value, count.source) == (1000, "ptx")


def test_bound_from_a_parameter_given_on_the_command_line(loops_example):
    counts, _ = _counts(loops_example, "rowSum", None, LaunchOverrides(params={"2": 77}))
    assert [c.value for c in counts.values()] == [77]


def test_bound_from_the_block_size(loops_example):
    counts, _ = _counts(loops_example, "treeSum", (EXAMPLES / "loops.cu").read_text())
    assert [(c.value, c.source) for c in counts.values()] == [(8, "ptx")]  # 128, 64, ..., 1
    wider, _ = _counts(loops_example, "treeSum", None, LaunchOverrides(block=(1024, 1, 1)))
    assert [c.value for c in wider.values()] == [10]


def test_unknown_bound_uses_the_annotation(loops_example):
    counts, _ = _counts(loops_example, "ragged", (EXAMPLES / "loops.cu").read_text())
    (count,) = counts.values()
    assert (count.value, count.source) == (64, "annotation")
    assert "global memory" in count.detail


def test_unknown_parameter_uses_the_default_and_says_so(loops_example):
    counts, _ = _counts(loops_example, "rowSum", None)
    (count,) = counts.values()
    assert (count.value, count.source) == (10, "default")
    assert "parameter #2 has no known value" in count.detail and "--param 2=VALUE" in count.detail
    (sentence,) = trip_count_assumptions(counts)
    assert "line 23" in sentence and "assumed 10" in sentence


def test_cli_loops_replace_the_default_only_for_unknown_counts(loops_example):
    unknown, _ = _counts(loops_example, "rowSum", None, LaunchOverrides(loops=5))
    assert [(c.value, c.source) for c in unknown.values()] == [(5, "cli")]
    known, _ = _counts(loops_example, "fixedSum", None, LaunchOverrides(loops=5))
    assert [(c.value, c.source) for c in known.values()] == [(32, "ptx")]


def test_step_and_inclusive_bound(small_kernels):
    module, source = small_kernels
    counts, _ = _counts(module, "stepped", source)
    assert [c.value for c in counts.values()] == [25]  # 3, 7, ..., 99


@pytest.mark.parametrize(("n", "expected"), [(10, 4), (9, 3), (1, 1), (1000, 334)])
def test_downward_loop(small_kernels, n, expected):
    module, source = small_kernels
    counts, _ = _counts(module, "countdown", source, LaunchOverrides(params={"n": n}))
    assert [(c.value, c.source) for c in counts.values()] == [(expected, "ptx")]


@pytest.mark.parametrize(("n", "expected"), [(1, 1), (37, 6), (1 << 20, 21)])
def test_geometric_loop(small_kernels, n, expected):
    module, source = small_kernels
    counts, _ = _counts(module, "halving", source, LaunchOverrides(params={"n": n}))
    assert [c.value for c in counts.values()] == [expected]


@pytest.mark.parametrize(("n", "expected"), [(3, 1), (37, 5), (1024, 10)])
def test_signed_halving_copied_back_after_the_test(small_kernels, n, expected):
    # k = n/2, n/4, ..., 1: nvcc cannot prove k positive, so it divides with a rounding bias into a temporary
    module, source = small_kernels
    counts, _ = _counts(module, "halfThenHalving", source, LaunchOverrides(params={"n": n}))
    assert [(c.value, c.source) for c in counts.values()] == [(expected, "ptx")]


@pytest.mark.parametrize(("kernel", "expected"), [("warpShuffleSum", 5), ("warpShuffleQuarters", 2)])
def test_warp_shuffle_loops_over_warp_size(small_kernels, kernel, expected):
    # offsets 16, 8, 4, 2, 1 and 8, 2: warpSize is 32 on every GPU
    module, source = small_kernels
    counts, _ = _counts(module, kernel, source)
    assert [(c.value, c.source) for c in counts.values()] == [(expected, "ptx")]


@pytest.mark.parametrize(("kernel", "factor"), [("warpShuffleSum", 2), ("warpShuffleQuarters", 4)])
def test_the_symbolic_recurrence_reads_the_rounded_signed_division(small_kernels, kernel, factor):
    # the same fact serves the trip count and the per-iteration values of addresses and branch conditions
    module, _ = small_kernels
    fn = next(f for f in module.kernels if kernel in f.name)
    cfg = build_cfg(fn)
    loops = find_loops(cfg)
    (loop,) = loops.loops
    recurrences = KernelDataflow(fn, cfg, loops).symbolic.recurrences.values()
    assert [(rc.op, rc.factor) for rc in recurrences if rc.loop == loop.id and rc.kind == "geometric"] == [
        ("div", factor)]


def test_a_failure_of_the_symbolic_values_leaves_the_count_unknown(small_kernels, monkeypatch):
    # the trip count asks the symbolic pass about a copied-back step: odd PTX that breaks that pass gives the
    # default with the reason, as it does in the memory analysis, rather than failing the file
    def broken(*_args):
        raise ZeroDivisionError("odd PTX")

    monkeypatch.setattr(dataflow_package, "analyze_symbolic", broken)
    module, source = small_kernels
    fn = next(f for f in module.kernels if "warpShuffleSum" in f.name)
    cfg = build_cfg(fn)
    counts = trip_counts(fn, cfg, find_loops(cfg), infer_launch("warpShuffleSum", source))
    assert [c.source for c in counts.values()] == ["default"]
    assert "could not be read" in next(iter(counts.values())).detail


def test_a_shift_that_is_not_a_rounded_division_is_not_counted(small_kernels, small_kernels_ptx):
    # the same loop with the rounding bias taken from the wrong bit no longer divides by 2 for every sign: the
    # closed form does not take it for a halving; stepping its values (offsets 16, 8, 4, 2, 1, all positive,
    # where the wrong bit is 0 as well) finds the 5 iterations it runs
    module, source = small_kernels
    fn = next(f for f in module.kernels if "warpShuffleSum" in f.name)
    bias = next(i for i in fn.body if i.opcode == "shr" and i.dtype == "u32")
    lines = small_kernels_ptx.splitlines()
    assert lines[bias.ptx_line - 1].endswith(", 31;")
    lines[bias.ptx_line - 1] = lines[bias.ptx_line - 1].replace(", 31;", ", 30;")
    mutated = next(f for f in parse_ptx("\n".join(lines)).kernels if "warpShuffleSum" in f.name)
    cfg = build_cfg(mutated)
    counts = trip_counts(mutated, cfg, find_loops(cfg), infer_launch("warpShuffleSum", source))
    (count,) = counts.values()
    assert "stepped through" in count.detail and "/2" not in count.detail, count.detail
    assert (count.value, count.source) == (5, "ptx")


def test_nested_loops_are_counted_per_entry(small_kernels):
    module, source = small_kernels
    counts, forest = _counts(module, "nested", source, LaunchOverrides(params={"rows": 12}))
    by_depth = {lp.depth: counts[lp.header].value for lp in forest.loops}
    assert by_depth == {1: 12, 2: 16}


def test_loop_with_a_break_is_unknown(small_kernels):
    module, source = small_kernels
    counts, _ = _counts(module, "early", source, LaunchOverrides(params={"n": 50}, loops=7))
    (count,) = counts.values()
    assert (count.value, count.source) == (7, "cli")
    assert "exits" in count.detail


def test_count_does_not_iterate_huge_loops(loops_example):
    # two billion iterations come out exactly: the count is the closed form of `k += c`, not a simulation
    # (speed is measured in benchmarks/, never asserted here)
    counts, _ = _counts(loops_example, "rowSum", None, LaunchOverrides(params={"2": 2_000_000_000}))
    assert [c.value for c in counts.values()] == [2_000_000_000]


def test_parameter_names_come_from_the_source(loops_example):
    source = (EXAMPLES / "loops.cu").read_text().replace("rowSum<<<", "// rowSum<<<")
    counts, _ = _counts(loops_example, "rowSum", source)
    assert "parameter n has no known value" in next(iter(counts.values())).detail


def test_parameter_names_without_source_are_reported():
    launch = infer_launch("rowSum", None, LaunchOverrides(params={"n": 4}))
    assert any("'n' is kept by name" in a for a in launch.assumptions)


@pytest.fixture(scope="module")
def examples_compiled(nvcc_available):
    return {name: _module(nvcc_available, EXAMPLES / f"{name}.cu") for name in ("reduction", "matmul")}


@pytest.mark.parametrize("kernel", ["reduceInterleaved", "reduceStrided", "reduceSequential"])
def test_reduction_loops_follow_the_block_size(examples_compiled, kernel):
    source = (EXAMPLES / "reduction.cu").read_text()
    counts, _ = _counts(examples_compiled["reduction"], kernel, source)
    assert [(c.value, c.source) for c in counts.values()] == [(8, "ptx")]  # log2(256)
    wide, _ = _counts(examples_compiled["reduction"], kernel, source, LaunchOverrides(block=(64, 1, 1)))
    assert [c.value for c in wide.values()] == [6]


def test_unrolled_loop_counts_the_unrolled_iterations(examples_compiled):
    counts, forest = _counts(examples_compiled["matmul"], "matmulNaive", (EXAMPLES / "matmul.cu").read_text())
    values = sorted((c.value, c.source) for c in counts.values())
    # nvcc unrolls `k < n` by 4: 1024 / 4 main iterations, and a remainder loop of n & 3 = 0 iterations that
    # its zero-trip guard skips (its counter starts at its exit value)
    assert values == [(0, "ptx"), (256, "ptx")]
    odd, _ = _counts(examples_compiled["matmul"], "matmulNaive", None, LaunchOverrides(params={"3": 1027}))
    assert sorted(c.value for c in odd.values()) == [3, 256]


def test_block_dependent_bounds_that_cancel_are_counted(examples_compiled):
    source = (EXAMPLES / "matmul.cu").read_text()
    counts, _ = _counts(examples_compiled["matmul"], "MatrixMulCUDA", source)
    (count,) = counts.values()
    assert (count.value, count.source) == (32, "ptx")  # wA / BLOCK_SIZE = 1024 / 32, whatever blockIdx.y is
    assert "index terms cancel" in count.detail
    smaller, _ = _counts(examples_compiled["matmul"], "MatrixMulCUDA", None,
                         LaunchOverrides(grid=(16, 16, 1), block=(32, 32, 1), params={"3": 512, "4": 512}))
    assert [c.value for c in smaller.values()] == [16]


def test_block_dependent_bounds_that_differ_are_averaged_over_the_blocks(small_kernels):
    # block b runs 100 - b iterations: the mean over the 64 blocks is 68.5
    module, source = small_kernels
    counts, _ = _counts(module, "triangle", source, LaunchOverrides(grid=(64, 1, 1), params={"n": 100}))
    (count,) = counts.values()
    assert (count.value, count.source) == (68, "ptx")
    assert "block-dependent" in count.detail and "37 to 100" in count.detail


def test_thread_dependent_bounds_that_are_not_affine_are_read_lane_by_lane(small_kernels):
    # k < tid * tid: neither affine in the thread index nor the same in every warp, but the same in every
    # block: each sampled lane's test is read, a warp runs its last lane's count (31^2, 63^2, 95^2, 127^2:
    # 7521 on average) and a thread tid^2 (5397.5 on average)
    module, source = small_kernels
    counts, _ = _counts(module, "quadratic", source, LaunchOverrides(block=(128, 1, 1)))
    (count,) = counts.values()
    assert (count.value, count.source) == (7521, "ptx")
    assert "961 to 16129" in count.detail and "5397.5 per thread" in count.detail


def test_thread_dependent_bounds_that_also_differ_between_blocks_are_read_lane_by_lane(small_kernels):
    # k < tid * tid + blockIdx.x * blockIdx.x: not affine, and not the same in every block either, so every lane
    # of the 4 warps of 4 sampled blocks (0, 21, 42, 63) is read: warp w of block b runs (32 w + 31)^2 + b^2
    # times, 9064.5 on average (rounded half to even), 961 to 16129 + 63^2
    module, source = small_kernels
    counts, _ = _counts(module, "quadraticPerBlock", source, LaunchOverrides(block=(128, 1, 1), grid=(64, 1, 1)))
    (count,) = counts.values()
    assert (count.value, count.source) == (9064, "ptx"), count.detail
    assert "961 to 20098" in count.detail


def test_trip_counts_without_a_launch_use_the_default(loops_example):
    fn = next(f for f in loops_example.kernels if "rowSum" in f.name)
    cfg = build_cfg(fn)
    counts = trip_counts(fn, cfg, find_loops(cfg), None)
    assert [(c.value, c.source) for c in counts.values()] == [(10, "default")]


INDEXED_LOOPS = ["unit_stride.cu", "barriers.cu", "warp_size.cu", "int_division.cu", "shared_tiling.cu"]


@pytest.mark.parametrize("name", INDEXED_LOOPS)
def test_exit_tests_read_with_shared_values_are_those_read_alone(nvcc_available, name) -> None:
    """A loop whose count differs between blocks or threads has its exit test read at many indices; the values
    no index enters (a bound, a step) are read once and shared. At every sampled index the test read that way
    is the one read from scratch, launch facts included, or both fail alike."""
    path = Path(__file__).resolve().parent / "kernels" / name
    module = _module(nvcc_available, path)
    source = path.read_text()
    shared = compared = 0
    names = demangle([fn.name for fn in module.kernels])
    for fn in module.kernels:
        cfg = build_cfg(fn)
        dataflow = KernelDataflow(fn, cfg, find_loops(cfg))
        launch = infer_launch(display_name(names[fn.name]), source)
        loop_list = list(_loop_list(dataflow.loops))
        for loop in loop_list:
            read = _ReadOnce(dataflow, loop, loop_list, launch)
            for block in _samples(launch, "grid"):
                for thread in _samples(launch, "block"):
                    try:
                        alone = _exit_test(dataflow, loop, loop_list, launch, (block, thread))
                    except Unknown as exc:
                        with pytest.raises(Unknown, match=re.escape(str(exc))):
                            read(block, thread)
                        continue
                    assert read(block, thread) == alone, (fn.name, block, thread)
                    compared += 1
            shared += len(read._shared)  # noqa: SLF001 - the values read once
    assert compared > 0 and shared > 0
