"""Trip counts of the loop shapes of current CUDA code, on nvcc's own output of `tests/loops/shapes.cu`.

Every kernel there is launched from `main` with known sizes, so every count follows from the launch: lanes,
blocks or the grid striding over an array, a loop nvcc unrolls by 4 with a remainder loop, one unrolled by hand
with its remainder, a 64-bit counter, a vectorised tile loader nested in a K loop, and a WMMA main loop.
"""

from __future__ import annotations

from math import ceil
from pathlib import Path

import pytest
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport
from source_lines import line_of

SHAPES = Path(__file__).resolve().parent / "loops" / "shapes.cu"


@pytest.fixture(scope="module")
def shapes(nvcc_available) -> FileReport:
    report = analyze_file(SHAPES)
    assert report.ok and report.kernels, [f.message for f in report.findings]
    return report


def _loops(report: FileReport, kernel: str) -> list:
    (k,) = [k for k in report.kernels if k.name == kernel]
    return k.loops


def _counts(report: FileReport, kernel: str) -> list[int]:
    loops = _loops(report, kernel)
    assert all(lp.trip_source == "ptx" for lp in loops), [lp.trip_detail for lp in loops]
    return [lp.trip_count for lp in loops]


def test_a_lane_strided_loop_runs_as_long_as_its_longest_lane(shapes):
    # for (i = lane; i < 50257; i += 32): lanes 0..16 run 1571 times, the others 1570; nvcc unrolls it by 4
    # behind a remainder loop that runs first ((C - 1 - lane) / 32 + 1) % 4 times in each lane
    prologue, main = sorted(_counts(shapes, "laneStrided"))
    assert prologue + 4 * main == ceil(50257 / 32)
    details = " ".join(lp.trip_detail for lp in _loops(shapes, "laneStrided"))
    assert "longest lane" in details and "per thread on average" in details


def test_a_block_strided_loop_counts_the_warp_maximum(shapes):
    # for (i = threadIdx.x; i < 50257; i += 256): threads 0..80 run 197 times, the rest 196; the warps that
    # hold thread 80 or below run 197, the others 196: 196.375 per warp, 196.3 per thread
    (loop,) = _loops(shapes, "blockStrided")
    assert (loop.trip_count, loop.trip_source) == (196, "ptx")
    assert "196 to 197" in loop.trip_detail and "196.3 per thread" in loop.trip_detail


def test_a_grid_stride_loop_counts_over_the_grid(shapes):
    # 2^20 elements over 528 x 256 threads: the first 102400 threads run 8 times, the others 7
    (loop,) = _loops(shapes, "gridStride")
    assert (loop.trip_count, loop.trip_source) == (8, "ptx")
    assert "7 to 8" in loop.trip_detail


def test_an_unrolled_loop_and_its_remainder(shapes):
    # K = 1027 from the launch: 256 iterations of 4 and 3 of the remainder
    assert sorted(_counts(shapes, "dotRows")) == [3, 256]


def test_a_64_bit_counter_and_bound(shapes):
    # size_t i from threadIdx.x in steps of 64 up to 2^20: 16384 iterations in each of the 64 threads
    assert _counts(shapes, "wideCount") == [16384]


def test_a_vectorised_tile_loader_inside_the_k_loop(shapes):
    # K = 4096 in steps of 16; 64 x 16 floats as 256 float4 over 128 threads: 2 per thread
    assert sorted(_counts(shapes, "tiledRows")) == [2, 256]


def test_the_tensor_core_main_loop_runs_k_over_16_steps(shapes):
    # K = 4096 in steps of 16 = 256 mma_sync per warp, unrolled by 4 (its remainder loop never runs)
    counts = sorted(_counts(shapes, "wmmaGemm"))
    assert counts == [0, 64]


def test_a_test_on_the_counter_plus_an_offset(shapes):
    # w = 7 from the launch: one iteration of 4 (nvcc tests j + (w & 3) - w != 0) and 3 of the remainder
    assert sorted(_counts(shapes, "maskedSum")) == [1, 3]


def test_an_int_counter_against_a_size_t_bound(shapes):
    # 2^20 elements over 1024 x 256 threads: 4 iterations each, compared as (size_t) i < n
    assert _counts(shapes, "intOverSizeT") == [4]


def test_the_loads_after_a_lane_dependent_remainder_loop_are_placed(shapes):
    # the main loop starts where the remainder loop left each lane (lane + 32 * its count): the dataflow joins
    # the remainder loop's exit with the path that skips it in that closed form, so the loads have addresses
    line = line_of(SHAPES, "m = fmaxf(m, in[(size_t)row * C + i]);")
    findings = [f for f in shapes.all_findings() if f.line == line]
    assert "unknown-access" not in {f.code for f in findings}
    # the line's loads are costed: a warp's row of floats spans 4 or 5 sectors (rows of 50257 floats)
    assert any("sectors/request" in f.message and "4.66667 sectors" in f.message for f in findings), \
        [f.message for f in findings]


def test_a_bound_that_moves_with_the_enclosing_loop_is_averaged_over_its_iterations(shapes):
    # 1000 elements in chunks of 256: the inner loop (k < blockDim.x && base + k < n, one `and.pred` of two
    # tests) runs 256, 256, 256 and 232 times, 250 on average; nvcc adds an endless loop for blockDim.x == 0,
    # which a kernel that finishes never enters
    loops = _loops(shapes, "chunkedDot")
    assert all(lp.trip_source == "ptx" for lp in loops), [lp.trip_detail for lp in loops]
    by_depth = sorted((lp.depth, lp.trip_count) for lp in loops)
    assert by_depth == [(1, 0), (1, 4), (2, 250)]
    (inner,) = [lp for lp in loops if lp.depth == 2]
    assert "232 to 256" in inner.trip_detail


def test_a_loop_unrolled_by_hand_and_its_remainder(shapes):
    # n = 1000 over 64 threads, four columns 64 apart a step while col + 192 < 1000: threads 0..39 take 4 steps,
    # 40..63 take 3 (3.6 per thread); the remainder starts where each thread stopped, so threads 0..39 (col >=
    # 1024) skip it behind nvcc's guard and 40..63 run 3 more: 0 in warp 0, 3 in warp 1
    unrolled, remainder = _loops(shapes, "handUnrolled")
    assert [unrolled.trip_source, remainder.trip_source] == ["ptx", "ptx"], [unrolled.trip_detail,
                                                                              remainder.trip_detail]
    assert unrolled.trip_count == 4 and "3.6 per thread" in unrolled.trip_detail
    assert remainder.trip_count == 2 and "0 to 3" in remainder.trip_detail
    assert "1.1 per thread" in remainder.trip_detail


def test_a_main_loop_skipped_by_its_guard_in_every_thread_runs_zero_times(shapes):
    # j from threadIdx.y below 16 in steps of 16: one pass per thread, which nvcc peels into straight code
    # ahead of the main loop of 4; that loop's start comes from one of four paths, and its guard (15 - ty < 48)
    # jumps past it in every thread of the 16x16 block, so it runs 0 times; the row loop runs 128 / 16 = 8
    loops = _loops(shapes, "rowPass")
    assert all(lp.trip_source == "ptx" for lp in loops), [lp.trip_detail for lp in loops]
    assert sorted((lp.depth, lp.trip_count) for lp in loops) == [(1, 8), (2, 0)]
    (main,) = [lp for lp in loops if lp.depth == 2]
    assert "guard ahead of the loop jumps past it" in main.trip_detail


def test_a_loop_whose_step_shrinks_on_the_last_chunk_is_stepped_through(nvcc_available):
    # j += len with len = n - j on the last chunk: 1000 elements in chunks of 256 take 4 iterations
    report = analyze_file(CARRY_FREE)
    (loop,) = _loops(report, "chunkedStage")
    assert (loop.trip_count, loop.trip_source) == (4, "ptx"), loop.trip_detail


ROOT = Path(__file__).resolve().parent.parent
CARRY_FREE = ROOT / "tests" / "kernels" / "carry_free.cu"
COUNTED = sorted([*ROOT.glob("examples/*.cu"), *ROOT.glob("tests/loops/*.cu"), *ROOT.glob("tests/kernels/*.cu"),
                  *ROOT.glob("validation/ladders/*/*.cu")])


@pytest.mark.parametrize("path", COUNTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_loop_falls_back_to_the_default_count_when_the_launch_is_known(nvcc_available, path: Path):
    # every kernel of the examples, these loop shapes, the memory corpus and the ladder suite whose grid and block
    # are known
    # (launch site, annotation) has every loop counted from the PTX, or from a stated annotation (on an H100,
    # whose sm_90 compiles every ladder version, __reduce_add_sync included)
    report = analyze_file(path, options=AnalysisOptions(gpu="h100"))
    assert report.ok, [f.message for f in report.findings]
    for kernel in report.kernels:
        launch = kernel.launch
        if launch is None or "default" in (launch.grid.source, launch.block.source):
            continue
        defaults = [lp.trip_detail for lp in kernel.loops if lp.trip_source == "default"]
        assert not defaults, (kernel.name, defaults)


def test_a_peeled_remainder_hands_the_counter_over_on_the_path_each_thread_takes(shapes):
    # d from threadIdx.x below 128 in steps of 16 inside a loop over 64 tiles: nvcc peels the remainder of the
    # loop unrolled by 4 into straight code, and the branches on it (decided per thread) choose the main loop's
    # start; in a 16x16 block every thread makes 8 passes, 2 of the main loop
    loops = _loops(shapes, "tileRows")
    assert all(lp.trip_source == "ptx" for lp in loops), [lp.trip_detail for lp in loops]
    assert sorted((lp.depth, lp.trip_count) for lp in loops) == [(1, 64), (2, 2)]


def test_a_main_loop_skipped_by_some_threads_only_counts_the_others(shapes):
    # the same loop in a block of 256 threads in x: threads 0..15 run the main loop twice, 16..79 once, 80..127
    # make only the peeled passes and 128..255 none; the four sampled warps (0, 2, 4, 6) run 2, 1, 0 and 0 times
    (main,) = [lp for lp in _loops(shapes, "wideTileRows") if lp.depth == 2]
    assert (main.trip_count, main.trip_source) == (1, "ptx"), main.trip_detail
    assert "0 to 2" in main.trip_detail and "0.5 per thread" in main.trip_detail


def test_a_test_on_a_copy_of_the_counter_taken_at_the_top_of_the_loop(shapes):
    # for (d = threadIdx.x; d < 32; d += 32) in a 32-wide block: one pass per thread, tested as `d < 0` on the
    # copy nvcc takes at the top of the body; the row loop inside (j from threadIdx.y below 32 in steps of 8)
    # makes 4 passes, one of its loop unrolled by 4
    loops = _loops(shapes, "onePassColumns")
    assert all(lp.trip_source == "ptx" for lp in loops), [lp.trip_detail for lp in loops]
    assert sorted((lp.depth, lp.trip_count) for lp in loops) == [(1, 1), (2, 1)]


def test_a_triangular_nest_and_its_copy_for_an_empty_inner_loop_are_counted(shapes):
    # nvcc emits the triangular nest for n > 0 and for n <= 0 (n = 64 from the launch); j2 from the global
    # thread index to 1024 is counted per warp in both copies, the second one lane by lane
    loops = _loops(shapes, "triangle")
    assert all(lp.trip_source == "ptx" for lp in loops), [lp.trip_detail for lp in loops]
    assert not [f for f in shapes.all_findings() if f.code == "assumed-trip-count" and f.kernel == "triangle"]


def test_a_loop_no_thread_of_the_launch_reaches_runs_zero_times_and_is_no_assumption(shapes):
    # mode = 0 from the launch: the other mode's loop, bounded by a loaded length, is never reached, so it runs
    # 0 times instead of the assumed default, and no finding says its count is assumed
    loops = _loops(shapes, "twoModes")
    assert all(lp.trip_source == "ptx" for lp in loops), [lp.trip_detail for lp in loops]
    dead = [lp for lp in loops if "no thread of this launch reaches" in lp.trip_detail]
    assert dead and all(lp.trip_count == 0 for lp in dead)  # the loop and nvcc's remainder of it
    assert not [f for f in shapes.all_findings() if f.code == "assumed-trip-count" and f.kernel == "twoModes"]


def test_an_inner_bound_read_from_a_copy_of_the_outer_counter(shapes):
    # pass i of 15 runs the inner loops i and i + 1 times, unrolled by 4 (i // 4 and (i + 1) // 4 main
    # iterations: 21 / 15 and 24 / 15 on average, 0 to 3); the outer counter reaches the bounds through the copy
    # nvcc takes at the top of the outer body
    loops = _loops(shapes, "triangularSolve")
    assert all(lp.trip_source == "ptx" for lp in loops), [lp.trip_detail for lp in loops]
    assert sorted((lp.depth, lp.trip_count) for lp in loops) == [(1, 15), (2, 1), (2, 2)]
    assert all("0 to 3 times" in lp.trip_detail for lp in loops if lp.depth == 2)


def test_a_count_neither_affine_nor_the_same_in_every_block_is_read_lane_by_lane(shapes):
    # for (i = 0; i < idx; i++) over 32 blocks of 32 threads, unrolled by 4: warp b runs its main loop
    # (32 b + 31) / 4 = 8 b + 7 times, 131 on average, and each thread idx / 4 times, 127.5 on average; its
    # remainder loop runs idx % 4 times, 3 in the warp's longest lane
    main, remainder = sorted(_loops(shapes, "perThreadWork"), key=lambda lp: -lp.trip_count)
    assert (main.trip_source, remainder.trip_source) == ("ptx", "ptx"), [main.trip_detail, remainder.trip_detail]
    assert (main.trip_count, remainder.trip_count) == (131, 3)
    assert "7 to 255" in main.trip_detail and "127.5 per thread" in main.trip_detail


def test_a_count_in_which_an_unknown_parameter_cancels(shapes):
    # for (i = 4 * iter; i < 4 * (iter + 1); i++) with iter the host's own loop counter: 4 for every iter
    (loop,) = _loops(shapes, "digitPass")
    assert (loop.trip_count, loop.trip_source) == (4, "ptx"), loop.trip_detail
    assert "whatever the value of parameter iter" in loop.trip_detail
