"""Distinct bytes of the accesses of a kernel merged where they overlap, and the L2 share a partitioned L2 keeps."""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.launch import LaunchOverrides
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.timing.footprint import Footprint, Lattice, lattice_terms, union_bytes
from kerncast.analysis.timing.pipelined import _l2_missed_rereads, l2_partitions, warm_l2_bytes

ROOT = Path(__file__).resolve().parent.parent
REGISTER_TILES = ROOT / "tests/footprints/register_tiles.cu"
LANE_ROWS = ROOT / "tests/footprints/lane_rows.cu"


def _sectors(lattices: list[Lattice], sector: int = 32) -> int:
    """Brute force: the bytes of the distinct sectors every address of every lattice touches."""
    seen: set[int] = set()
    for x in lattices:
        points = [x.offset]
        for c, n in x.terms:
            points = [p + k * c for p in points for k in range(n)]
        for p in points:
            seen.update(range(p // sector, (p + x.width - 1) // sector + 1))
    return len(seen) * sector


def _lat(offset: int, terms: tuple[tuple[int, int], ...], width: int = 4, written: bool = False) -> Lattice:
    return Lattice(offset, terms, width, written)


def test_a_register_tiled_products_masked_offsets_are_indices_and_its_footprint_is_its_three_matrices(nvcc_available):
    """nvcc writes `threadIdx.x % 16 * 8` of a 256-thread block as `(threadIdx.x * 8) & 120` and the tile row
    `threadIdx.x / 16 * 8` as `(threadIdx.x >> 1) & 0x7ffffff8`: runs of bits, each 2^s times a quotient kept
    below 2^n. Read as such, every global access of the 4096^3 product is affine, and the distinct bytes are
    A, B and C once each (3 x 64 MiB), not the requests' 4.4 GB."""
    report = analyze_file(REGISTER_TILES, options=AnalysisOptions(gpu="rtx3090", lime=False))
    (kernel,) = report.kernels
    notes = kernel.time.assumptions
    assert not any("not affine" in a for a in notes), notes
    (distinct,) = [a for a in notes if a.startswith("distinct global bytes")]
    assert distinct.startswith(f"distinct global bytes {3 * 4096 * 4096 * 4 / 1e6:.3g} MB"), distinct


def test_a_lane_strided_loops_remainder_count_through_not_of_the_lane_keeps_its_addresses_affine(nvcc_available):
    """A warp per row of a layer normalisation: nvcc starts each unrolled lane-strided loop after its
    remainder iterations, ((C - 1 - lane) / 32 + 1) & 3, computed with `not.b32` of the lane. Read as
    C - 1 - lane (~lane = -lane - 1) that count is 0 in every lane for C = 768, so every access is affine and
    the distinct bytes are the input and output rows (2 x 8192 x 768 floats), the statistics and the
    channel weights: 50.4 MB, where reading the count as unknown left the rows out and counted their 151 MB
    of requests as DRAM traffic."""
    report = analyze_file(LANE_ROWS, options=AnalysisOptions(gpu="h100", lime=False))
    (kernel,) = report.kernels
    notes = kernel.time.assumptions
    assert not any("not affine" in a for a in notes), notes
    rows = 2 * 8192 * 768 * 4
    stats_and_weights = 2 * 8192 * 4 + 2 * 768 * 4
    (distinct,) = [a for a in notes if a.startswith("distinct global bytes")]
    assert distinct.startswith(f"distinct global bytes {(rows + stats_and_weights) / 1e6:.3g} MB"), distinct


def test_the_waves_blocks_reread_each_others_tiles_from_the_l2_at_the_same_step(nvcc_available):
    """The register-tiled product's 164 resident blocks on an RTX 3090 read 92 MB over their run, 14 times the
    L2, but at one step of their K loop only 156 KB: the B rows one block reads are read by the other blocks
    of the wave at the same step, so they come from the L2. The DRAM floor is then the waves' distinct bytes,
    about 0.65 GB, not the requests' 4.4 GB."""
    report = analyze_file(REGISTER_TILES, options=AnalysisOptions(gpu="rtx3090", lime=False))
    (floor,) = [a for a in report.kernels[0].time.assumptions if a.startswith("DRAM floor")]
    megabytes = float(floor.split()[2])
    assert 201 < megabytes < 1000, floor


def test_rereads_miss_in_the_l2_by_the_share_of_their_distance_it_cannot_hold():
    """Of 100 MB of re-reads by a wave with 50 MB of distinct bytes against a 10 MB L2: those other blocks
    make at the same step (here 60 MB: 20 blocks of 5.5 MB each, 110 MB, less the 50 distinct) all hit when a
    step touches 1 MB; the 40 MB a block makes of its own bytes miss by 1 - 10/50. A step of 20 MB misses
    half the 60 MB too."""
    fp = Footprint(per_wave=50e6, per_step=1e6, per_block=5.5e6)
    assert _l2_missed_rereads(fp, 150e6, 50e6, 10e6, 20) == pytest.approx(40e6 * 0.8)
    fp.per_step = 20e6
    assert _l2_missed_rereads(fp, 150e6, 50e6, 10e6, 20) == pytest.approx(40e6 * 0.8 + 60e6 * 0.5)


def test_a_load_and_a_store_of_the_same_element_touch_it_once():
    t = ((4, 4096),)
    assert union_bytes([_lat(0, t), _lat(0, t, written=True)], 32) == pytest.approx(4 * 4096)


def test_even_and_odd_halves_share_every_sector():
    t = ((8, 4096),)  # g[2*t] and g[2*t+1]: each alone moves whole sectors for half of its bytes
    pair = [_lat(0, t), _lat(4, t)]
    assert union_bytes(pair, 32) == pytest.approx(_sectors(pair)) == pytest.approx(8 * 4096)
    assert union_bytes(pair[:1], 32) == pytest.approx(8 * 4096)


def test_the_loads_of_an_unrolled_loop_fill_each_others_rows():
    # a 32 x 32 tile read 8 rows at a time (threadIdx.y < 8, four loads at rows j, j+8, j+16, j+24) over
    # a 512-float-wide matrix of 16 x 16 tiles
    w = 512 * 4
    terms = ((4, 32), (w, 8), (128, 16), (32 * w, 16))
    loads = [_lat(j * w, terms) for j in (0, 8, 16, 24)]
    assert union_bytes(loads, 32) == pytest.approx(_sectors(loads)) == pytest.approx(512 * 512 * 4)


def test_a_stencils_neighbours_add_their_edges_only():
    w = 256 * 4
    terms = ((4, 254), (w, 254))  # interior points of a 256 x 256 image
    taps = [_lat(w + 4 + dy * w + dx * 4, terms) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
    exact = _sectors(taps)
    assert union_bytes(taps, 32) == pytest.approx(exact, rel=0.1)
    assert union_bytes(taps, 32) < 1.2 * union_bytes(taps[:1], 32)


def test_three_16_byte_loads_of_every_48_bytes_touch_every_sector():
    """`in[3 * g + k]` of int4 for k = 0, 1, 2 (12 ints a thread): points 48 bytes apart fall at byte 0 or 16 of
    their sectors in turn, so the load at +16 adds half a sector per point and the one at +32 adds none: the
    three touch every byte once, not two thirds of them."""
    t = ((48, 4096),)
    loads = [_lat(16 * k, t, width=16) for k in range(3)]
    assert union_bytes(loads, 32) == pytest.approx(_sectors(loads)) == pytest.approx(48 * 4096)
    assert union_bytes(loads[:2], 32) == pytest.approx(_sectors(loads[:2])) == pytest.approx(48 * 4096)


def test_a_sum_reading_12_ints_a_thread_as_three_int4_loads_touches_its_input_once(nvcc_available):
    """The batched vector sum of 2^30 ints reads them as three int4 loads per thread: its distinct bytes are the
    4 GiB input, so its DRAM floor is that input at the achievable bandwidth, not two thirds of it."""
    report = analyze_file(ROOT / "validation/ladders/h100-vector-sum/k4_batched_int4.cu",
                          options=AnalysisOptions(gpu="h100", lime=False))
    (kernel,) = report.kernels
    (distinct,) = [a for a in kernel.time.assumptions if a.startswith("distinct global bytes")]
    assert distinct.startswith(f"distinct global bytes {2 ** 30 * 4 / 1e6:.3g} MB"), distinct


def test_column_neighbours_share_their_sectors():
    terms = ((4096, 512),)  # a[row * 1024] and a[row * 1024 + 1]: one sector per row for both
    pair = [_lat(0, terms), _lat(4, terms)]
    assert union_bytes(pair, 32) == pytest.approx(_sectors(pair)) == pytest.approx(512 * 32)


def _time(path: Path, kernel: str, gpu: str, grid: str, block: str, params: list[str]):
    launch = LaunchOverrides.from_strings(grid=grid, block=block, params=params)
    report = analyze_file(path, options=AnalysisOptions(gpu=gpu, lime=False, overrides=launch))
    return next(k for k in report.kernels if k.name.split("(")[0] == kernel).time


def _note(t, start: str) -> str:
    return next(a for a in t.assumptions if a.startswith(start))


def test_real_kernels_count_overlapping_accesses_once(nvcc_available):
    # evenOdd reads and writes data[i]: 2 Mi floats touched once, read in and written back
    t = _time(ROOT / "tests/kernels/divergence.cu", "evenOdd", "h100", "16384", "128", ["steps=16"])
    assert _note(t, "distinct global bytes").startswith("distinct global bytes 8.39 MB, 16.8 MB of DRAM traffic")
    # moveAos reads p[i].y and p[i].x and writes p[i].x of 12-byte structs: the fields share their sectors, so
    # the launch touches the array once (4 Mi x 12 bytes), not once per field
    t = _time(ROOT / "tests/kernels/aos.cu", "moveAos", "h100", "32768", "128", ["n=4194304"])
    assert _note(t, "distinct global bytes").startswith("distinct global bytes 50.3 MB")


def test_a_partitioned_l2_keeps_half_its_size_between_launches(nvcc_available):
    h100, rtx = load_profile("h100"), load_profile("rtx4090")
    assert l2_partitions(h100)[0] == 2 and warm_l2_bytes(h100) == pytest.approx(h100.l2_bytes / 2)
    assert l2_partitions(rtx) == (1, None) and warm_l2_bytes(rtx) == pytest.approx(rtx.l2_bytes)
    # copy of 16 MiB: its reads fit in half the H100's 50 MB L2 but its 33.6 MB footprint does not, so what it
    # writes reaches DRAM; its loads wait the mean of the near and far partitions' hit latencies
    t = _time(ROOT / "examples/fma_loop.cu", "copy", "h100", "16384", "256", [])
    assert t.detail["dram_bytes"] == pytest.approx(16.8e6, rel=0.01)
    assert any("averaged with the far partition" in a for a in t.assumptions)


TILE = """\
// kerncast: block=240
__global__ void tileRead(const float *in, float *out)
{
    int r = threadIdx.x / 24, c = threadIdx.x % 24;
    out[blockIdx.x * 240 + threadIdx.x] = in[(blockIdx.x * 10 + r) * 1000 + c];
}
int main() { tileRead<<<128, 240>>>(0, 0); return 0; }
"""


def test_a_tile_indexed_by_quotient_and_remainder_has_its_footprint(tmp_path, nvcc_available):
    """nvcc divides by 24 with a multiply and a shift and takes the remainder as `t - 24 * (t / 24)`: the
    footprint reads the quotient as an index of 10 values and the thread index as 24 x quotient + remainder,
    so each block's 10 rows of 24 floats (3 sectors each) are counted, not 240 x 10 scattered elements."""
    src = tmp_path / "tile.cu"
    src.write_text(TILE)
    k = analyze_file(src, options=AnalysisOptions(gpu="h100", lime=False)).kernels[0]
    note = _note(k.time, "distinct global bytes")
    rows = 128 * 10 * 3 * 32
    assert note.startswith(f"distinct global bytes {(rows + 128 * 240 * 4) / 1e6:.3g} MB"), note
    assert not any("not affine" in a for a in k.time.assumptions)


def test_a_row_and_a_tap_with_one_stride_are_one_index():
    """`in[(row + u) * w + col]` over 16 rows and 5 taps reads 20 rows, not 80: terms with one coefficient sum
    into one index, indices of one value are dropped, and the distinct bytes agree with brute force."""
    w = 8192 * 4
    terms = lattice_terms([(w, 16), (w, 5), (4, 16), (16, 1)])
    assert terms == ((4, 16), (w, 20))
    unmerged = _lat(0, ((4, 16), (w, 16), (w, 5)))
    assert union_bytes([_lat(0, terms)], 32) == _sectors([unmerged]) == 20 * 64
