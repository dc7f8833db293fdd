"""Tensor-core kernels in the time models: a matrix instruction is a warp's whole product, charged at the GPU's
tensor-core rate for its input type, and a `wmma` tile is one request of its whole size.

The GEMMs of `tests/tensor_cores/wmma_gemm.cu` do 2 M N K FLOPs each; no prediction may be faster than the
tensor cores' vendor peak allows, and the kerncast time must lie in the roofline range."""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.demangle import demangle, display_name
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.isa import classify
from kerncast.analysis.matrix_ops import MatrixOp, matrix_op, tensor_rate
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.power.events import instruction_cost
from kerncast.analysis.ptx import parse_ptx
from kerncast.analysis.ptx.model import MatrixTile, matrix_tile
from kerncast.analysis.timing.pipelined import tensor_slots

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "tensor_cores" / "wmma_gemm.cu"
HOPPER_PTX = ROOT / "tests" / "ptx_constructs" / "hopper.ptx"
SIZE = 2048  # M = N = K in the source
GEMM_FLOPS = 2.0 * SIZE**3
HALF = "wmmaGemm<__half, __half, float, 16, 16, 16>"
TF32 = "wmmaGemm<float, nvcuda::wmma::precision::tf32, float, 16, 16, 8>"
DOUBLE = "wmmaGemm<double, double, double, 8, 8, 4>"
#: each kernel's product, as its wmma/mma instruction names it
PRODUCTS = {
    HALF: MatrixOp(2.0 * 16 * 16 * 16, "f16", "f32"),
    TF32: MatrixOp(2.0 * 16 * 16 * 8, "tf32", "f32"),
    DOUBLE: MatrixOp(2.0 * 8 * 8 * 4, "f64", "f64"),
    "mmaSync": MatrixOp(2.0 * 16 * 8 * 16, "f16", "f32"),
}


@pytest.fixture(scope="module")
def kernels(nvcc_available):
    """The source's kernels, parsed from its sm_80 PTX, by their display names."""
    result = compile_cuda(SOURCE, options=CompileOptions(arch="sm_80"))
    assert result.ok, result.stderr
    functions = parse_ptx(result.ptx).kernels
    signatures = demangle(fn.name for fn in functions)
    return {display_name(signatures[fn.name]): fn for fn in functions}


@pytest.fixture(scope="module")
def analyse(nvcc_available):
    """`analyse(gpu, arch=None)`: the source's report on one GPU profile (each analysed once)."""
    done: dict[tuple[str, str | None], object] = {}

    def run(gpu: str, arch: str | None = None):
        if (gpu, arch) not in done:
            done[gpu, arch] = analyze_file(SOURCE, options=AnalysisOptions(gpu=gpu, arch=arch, lime=False))
        return done[gpu, arch]

    return run


def _matrix_ops(fn) -> set[MatrixOp]:
    return {op for ins in fn.body if (op := matrix_op(ins)) is not None}


def test_each_kernels_product_is_read_from_its_instruction(kernels):
    assert {name: _matrix_ops(kernels[name]) for name in PRODUCTS} == {n: {p} for n, p in PRODUCTS.items()}


def test_a_wgmma_is_shared_by_the_four_warps_of_a_warpgroup():
    fn = parse_ptx(HOPPER_PTX.read_text()).function("hopper_kernel")
    ops = [matrix_op(ins) for ins in fn.body if ins.opcode in ("wgmma", "tcgen05")]
    wgmma = [op for op in ops if op is not None]
    assert wgmma == [MatrixOp(2.0 * 64 * 8 * 16 / 4, "bf16", "f32")]
    assert len(ops) > len(wgmma)  # tcgen05.mma names no shape in its mnemonic: no product claimed


def test_wmma_tiles_have_the_shape_of_their_matrix(kernels):
    tiles = {(ins.modifiers[1], ins.space, matrix_tile(ins.opcode, ins.modifiers), ins.access_bytes)
             for name in (HALF, DOUBLE) for ins in kernels[name].body
             if ins.opcode == "wmma" and ins.modifiers[0] in ("load", "store")}
    assert tiles == {
        ("a", "global", MatrixTile(16, 16, 2), 16),  # A row-major: 16 rows of K = 16 halves
        ("b", "global", MatrixTile(16, 16, 2), 16),  # B column-major: N = 16 columns of K = 16
        ("d", "global", MatrixTile(16, 16, 4), 32),  # D row-major: 16 rows of 16 floats
        ("a", "generic", MatrixTile(8, 4, 8), 8),  # f64 8x4 A: 8 rows of 4 doubles
        ("b", "generic", MatrixTile(8, 4, 8), 8),
        ("d", "generic", MatrixTile(8, 8, 8), 16),
    }


@pytest.mark.parametrize("gpu", ["v100", "a100", "h100"])
def test_the_kerncast_model_holds_the_tensor_cores_for_the_whole_product(kernels, gpu):
    profile = load_profile(gpu)
    fn = kernels[HALF]
    classes = {i: classify(ins) for i, ins in enumerate(fn.body)}
    slots = tensor_slots(fn.body, classes, profile)
    mma = [i for i, ins in enumerate(fn.body) if matrix_op(ins) is not None]
    assert sorted(slots) == mma
    # SM cycles per warp = 8192 FLOPs / the FLOPs per SM per clock (1024 on a V100 ... 4096 on an H100)
    assert {slots[i] * 32 for i in mma} == {8192 / profile.tensor["f16"]}


@pytest.mark.parametrize("gpu", ["a100", "h100", "rtx4090"])
def test_no_time_beats_the_tensor_cores_peak(analyse, gpu):
    profile = load_profile(gpu)
    report = analyse(gpu)
    assert report.ok and {k.name for k in report.kernels} == set(PRODUCTS)
    checked = 0
    for k in report.kernels:
        rate = tensor_rate(profile, PRODUCTS[k.name])
        if rate is None:
            continue
        floor_us = GEMM_FLOPS / (rate * profile.sm_count * profile.core_clock_mhz)
        best, worst = k.time.roofline_us
        assert best >= floor_us * 0.999, (k.name, best, floor_us)
        assert best * 0.999 <= k.time.us <= worst * 1.001, (k.name, k.time.us, best, worst)
        assert any("tensor cores:" in a and PRODUCTS[k.name].label in a for a in k.time.assumptions)
        checked += 1
    assert checked >= 3


def test_a_gpu_without_the_rate_runs_the_products_on_the_sp_lanes(analyse, kernels):
    profile = load_profile("t4")  # Turing: no TF32 or FP64 tensor cores
    report = analyse("t4", "sm_80")
    k = next(k for k in report.kernels if k.name == TF32)
    assert any("no tensor-core rate for tf32 -> f32" in a for a in k.time.assumptions)
    sp_peak = profile.units["SP"] * profile.sm_count * profile.core_clock_mhz * 2  # FLOPs per microsecond
    assert k.time.roofline_us[0] >= GEMM_FLOPS / sp_peak * 0.999
    # the kerncast model holds the SM for the product's multiply-adds at one per SP lane per clock
    fn = kernels[TF32]
    slots = tensor_slots(fn.body, {i: classify(ins) for i, ins in enumerate(fn.body)}, profile)
    assert set(slots.values()) == {4096 / (2 * profile.units["SP"]) / 32}


@pytest.mark.parametrize(("kernel", "tile_bytes", "tile", "steps"), [
    (HALF, 512, 16, 16),  # f16 16x16 tiles of A and B, K in steps of 16; f32 16x16 tile of C
    (DOUBLE, 256, 8, 4),  # f64 8x4 tiles through generic addresses built on the kernel's pointers
])
def test_wmma_tiles_are_whole_requests_of_global_memory(analyse, kernel, tile_bytes, tile, steps):
    k = next(k for k in analyse("h100").kernels if k.name == kernel)
    warps = (SIZE // tile) ** 2
    stored = tile * tile * (4 if kernel == HALF else 8)
    requested = warps * (SIZE // steps * 2 * tile_bytes + stored)
    assert k.time.detail["dram_bytes"] == pytest.approx(requested, rel=1e-6)


def test_energy_prices_a_product_by_its_multiply_adds_and_a_tile_by_its_sectors(kernels):
    pj = {"int": 500.0, "tensor": 6600.0, "l1_sector": 110.0, "l2_sector": 560.0, "dram_sector": 2000.0}
    cost = {}
    for name in (HALF, "mmaSync"):
        for ins in kernels[name].body:
            if matrix_op(ins) is not None or ins.opcode == "wmma" and ins.modifiers[0] == "load":
                cost[name, ins.opcode, ins.modifiers[0]] = instruction_cost(ins, None, pj)
    # 4096 multiply-adds cost the table's figure, an m16n8k16 product's 2048 half of it
    assert cost[HALF, "wmma", "mma"].components == {"execute": 6600.0}
    assert cost["mmaSync", "mma", "sync"].components == {"execute": 3300.0}
    load = cost[HALF, "wmma", "load"]
    assert (load.category, load.sectors) == ("global loads", 16.0)  # a 16 x 16 f16 tile: 16 rows of 32 bytes
