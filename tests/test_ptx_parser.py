"""The PTX front end on real nvcc output of the repository's examples, at three targets, and on hand-written PTX.

Structure is asserted concretely (names, block counts, loops and their lines, shared sizes, the line of a given
instruction) so that a parser that merely "does not crash" fails these tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.deps import block_dependences
from kerncast.analysis.isa import classify
from kerncast.analysis.loops import find_loops
from kerncast.analysis.ptx import PtxSyntaxError, kernel_shared_bytes, parse_ptx
from kerncast.analysis.ptx.model import Addr, Imm, PredPair, Reg, Sym, Vec
from source_lines import line_after

ARCHES = ("sm_75", "sm_80", "sm_90")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="module")
def example_ptx(compile_example):
    """PTX text of every example at every target, compiled once per module."""
    out = {}
    for name in ("vector_add", "matmul", "transpose", "reduction", "saxpy"):
        for arch in ARCHES:
            result = compile_example(name, arch=arch)
            assert result.ok, result.diagnostics
            out[name, arch] = result.ptx
    return out


def _kernel(module, display_prefix: str):
    for k in module.kernels:
        if display_prefix in k.name:
            return k
    raise AssertionError(f"no kernel containing {display_prefix!r}: {[k.name for k in module.kernels]}")


def _lines_of(fn, full_opcode_prefix: str) -> list[int]:
    return sorted({i.loc.line for i in fn.body if i.full_opcode.startswith(full_opcode_prefix) and i.loc})


@pytest.mark.parametrize("arch", ARCHES)
def test_module_header_and_kernel_names(example_ptx, arch):
    m = parse_ptx(example_ptx["matmul", arch])
    assert m.target == (arch,)
    assert m.address_size == 64
    assert m.version is not None and float(m.version) >= 7.0
    names = sorted(k.name for k in m.kernels)
    assert names == ["_Z11matmulNaivePKfS0_Pfi", "_Z13MatrixMulCUDAILi32EEvPfPKfS2_ii"]
    assert any(f.endswith("matmul.cu") for f in m.files.values())


@pytest.mark.parametrize("arch", ARCHES)
def test_vector_add_structure(example_ptx, arch):
    m = parse_ptx(example_ptx["vector_add", arch])
    (k,) = m.kernels
    assert [p.type for p in k.params] == ["u64", "u64", "u64", "u32"]
    assert k.params[0].name == "_Z9vectorAddPKfS0_Pfi_param_0"
    cfg = build_cfg(k)
    # entry block with the bounds check, the guarded body, and the return block
    assert len(cfg.blocks) == 2 or len(cfg.blocks) == 3
    assert find_loops(cfg).loops == []
    assert _lines_of(k, "ld.global") == [9]
    assert _lines_of(k, "st.global") == [9]
    assert k.source_line == 5
    loads = [i for i in k.body if i.opcode == "ld" and i.space == "global"]
    assert len(loads) == 2 and all(i.access_bytes == 4 for i in loads)


@pytest.mark.parametrize("arch", ARCHES)
def test_matmul_tiled_loop_shared_and_barriers(example_ptx, arch):
    m = parse_ptx(example_ptx["matmul", arch])
    k = _kernel(m, "MatrixMul")
    assert k.static_shared_bytes == 2 * 32 * 32 * 4
    assert kernel_shared_bytes(m, k) == 8192
    shared = sorted(d.name for d in k.decls if d.space == "shared")
    assert shared[0].endswith("E2As") and shared[1].endswith("E2Bs")
    cfg = build_cfg(k)
    loops = find_loops(cfg)
    assert len(loops.loops) == 1
    (loop,) = loops.loops
    assert loop.depth == 1
    assert loop.header_line(cfg) in range(21, 32)
    lo, hi = loop.source_lines(cfg)
    assert lo == 21 and hi >= 29
    assert _lines_of(k, "bar.sync") == [26, 31]
    # the unrolled inner product: 32 shared loads of each tile
    assert sum(1 for i in k.body if i.opcode == "ld" and i.space == "shared") == 64
    assert _lines_of(k, "st.global") == [34]


@pytest.mark.parametrize("arch", ARCHES)
def test_reduction_dynamic_shared_and_loops(example_ptx, arch):
    m = parse_ptx(example_ptx["reduction", arch])
    assert [d.name for d in m.extern_shared()] == ["sdata"]
    assert {k.name for k in m.kernels} == {
        "_Z17reduceInterleavedPKfPfj", "_Z13reduceStridedPKfPfj", "_Z16reduceSequentialPKfPfj"}
    source = EXAMPLES / "reduction.cu"
    for name, loop_length in (("reduceInterleaved", 5), ("reduceStrided", 6), ("reduceSequential", 5)):
        k, first = _kernel(m, name), line_after(source, f"void {name}(", "for (")
        loop_lines = range(first, first + loop_length)  # the `for` line down to the loop's __syncthreads()
        assert k.static_shared_bytes == 0
        cfg = build_cfg(k)
        loops = find_loops(cfg)
        assert len(loops.loops) == 1, k.name
        assert loops.loops[0].header_line(cfg) in loop_lines
        stores = [i for i in k.body if i.opcode == "st" and i.space == "shared"]
        assert stores and all(isinstance(i.operands[0], Addr) for i in stores)


@pytest.mark.parametrize("arch", ARCHES)
def test_transpose_shared_sizes_and_unrolled_loops(example_ptx, arch):
    m = parse_ptx(example_ptx["transpose", arch])
    assert _kernel(m, "transposeTiled").static_shared_bytes == 32 * 32 * 4
    assert _kernel(m, "transposePadded").static_shared_bytes == 32 * 33 * 4
    naive = _kernel(m, "transposeNaive")
    # the constant-trip loop is fully unrolled: four stores, no loop left
    assert find_loops(build_cfg(naive)).loops == []
    assert len([i for i in naive.body if i.opcode == "st" and i.space == "global"]) == 4
    assert _lines_of(naive, "st.global") == [12]


@pytest.mark.parametrize("arch", ARCHES)
def test_saxpy_grid_stride_loop(example_ptx, arch):
    m = parse_ptx(example_ptx["saxpy", arch])
    saxpy = _kernel(m, "saxpy")
    cfg = build_cfg(saxpy)
    loops = find_loops(cfg)
    assert len(loops.loops) == 1
    assert loops.loops[0].source_lines(cfg) == (11, 12)
    # the loop's back edge is a guarded branch to its header
    header = loops.loops[0].header
    latch = cfg.blocks[loops.loops[0].latches[0]]
    last = saxpy.body[latch.end - 1]
    assert last.opcode == "bra" and last.guard is not None
    assert saxpy.labels[last.branch_target] == cfg.blocks[header].start


def test_dependence_dag_orders_reads_after_writes(example_ptx):
    m = parse_ptx(example_ptx["vector_add", "sm_75"])
    (k,) = m.kernels
    cfg = build_cfg(k)
    for b in cfg.blocks:
        g = block_dependences(cfg, b.id)
        for n in g.nodes:
            for p, kind in g.preds[n]:
                assert p < n and kind in ("raw", "waw", "sync")
    body_block = max(cfg.blocks, key=lambda b: b.size)
    g = block_dependences(cfg, body_block.id)
    store = next(n for n in g.nodes if k.body[n].opcode == "st")
    # the store depends (transitively) on both global loads
    seen, stack = set(), [store]
    while stack:
        n = stack.pop()
        for p, _ in g.preds[n]:
            if p not in seen:
                seen.add(p)
                stack.append(p)
    assert sum(1 for n in seen if k.body[n].opcode == "ld" and k.body[n].space == "global") == 2


def test_instruction_classes_cover_examples(example_ptx):
    m = parse_ptx(example_ptx["matmul", "sm_80"])
    k = _kernel(m, "MatrixMul")
    classes = {(i.full_opcode, classify(i).type) for i in k.body}
    assert ("bar.sync", "misc") in classes
    assert any(t == "shared" and op.startswith("ld.shared") for op, t in classes)
    assert any(t == "global" and op.startswith("ld.global") for op, t in classes)
    assert all(classify(i).known for i in k.body)


HAND_WRITTEN = r"""
//
// hand-written PTX exercising the syntax nvcc emits
//
.version 8.5
.target sm_80
.address_size 64

.extern .func (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
.global .align 1 .b8 $str[4] = {104, 105, 10, 0};
.const .align 4 .b8 table[16];

.visible .entry k(
	.param .u64 .ptr .global .align 4 k_param_0,
	.param .align 8 .b8 k_param_1[16]
)
.maxntid 128, 1, 1
.minnctapersm 2
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<10>;
	.reg .f32 	%f<9>;
	.reg .b64 	%rd<6>;
	.shared .align 16 .b8 tile[512];
	.loc	1 10 3
	ld.param.u64 	%rd1, [k_param_0];
	mov.u32 	%r1, %tid.x;
	setp.lt.s32 	%p1|%p2, %r1, 32;
	@!%p1 bra 	$L__BB0_2;
	.loc	1 11 5, function_name $L__info_string0, inlined_at 1 20 7
	ld.global.nc.v4.f32 	{%f1, %f2, %f3, %f4}, [%rd1+-16];
	st.shared.v2.f32 	[tile+8], {%f1, %f2};
	shfl.sync.down.b32 	%r2|%p2, %r1, 1, 31, -1;
	atom.global.add.u32 	%r3, [%rd1], 1;
	red.shared.add.f32 	[tile], %f3;
	mov.b32 	%f5, 0f3F800000;
	mov.f64 	%fd1, 0d4000000000000000;
	cp.async.ca.shared.global 	[tile], [%rd1], 16;
	bar.sync 	0;
	{
	.reg .b32 temp_param_reg;
	.param .b64 param0;
	st.param.b64 	[param0], %rd1;
	call.uni (retval0), vprintf, (param0, param1);
	}
$L__BB0_2:
	.pragma "nounroll";
	membar.gl;
	ret;
}
	.file	1 "/src/k.cu"
"""


def test_hand_written_ptx_operands_and_directives():
    m = parse_ptx(HAND_WRITTEN)
    assert [f.name for f in m.functions] == ["vprintf", "k"]
    assert m.functions[0].has_body is False and m.functions[0].return_params[0].name == "func_retval0"
    assert {g.name for g in m.globals} == {"$str", "table"}
    (k,) = m.kernels
    assert k.directives["maxntid"] == (128, 1, 1) and k.directives["minnctapersm"] == (2,)
    assert k.params[0].ptr_space == "global" and k.params[1].array == (16,)
    assert k.static_shared_bytes == 512
    assert "nounroll" in k.pragmas
    by_op = {i.full_opcode: i for i in k.body}
    setp = by_op["setp.lt.s32"]
    assert isinstance(setp.operands[0], PredPair)
    bra = by_op["bra"]
    assert bra.guard.negated and bra.guard.reg == "%p1" and bra.branch_target == "$L__BB0_2"
    ld = by_op["ld.global.nc.v4.f32"]
    assert isinstance(ld.operands[0], Vec) and len(ld.operands[0].items) == 4
    assert ld.operands[1] == Addr(Reg("%rd1"), -16)
    assert ld.access_bytes == 16 and ld.vector_width == 4 and ld.space == "global"
    assert ld.loc.file == "/src/k.cu" and ld.loc.line == 11
    st = by_op["st.shared.v2.f32"]
    assert st.operands[0] == Addr(Sym("tile"), 8) and not st.has_dest
    assert by_op["mov.b32"].operands[1] == Imm(1.0, "0f3F800000")
    assert by_op["mov.f64"].operands[1].value == 2.0
    assert by_op["shfl.sync.down.b32"].operands[-1] == Imm(-1, "-1")
    assert by_op["red.shared.add.f32"].has_dest is False
    assert by_op["cp.async.ca.shared.global"].has_dest is False
    assert any(i.opcode == "call" for i in k.body)
    assert any(d.name == "temp_param_reg" for d in k.decls)
    assert k.labels["$L__BB0_2"] == len(k.body) - 2
    assert by_op["mov.u32"].operands[1] == Reg("%tid.x") and Reg("%tid.x").is_special
    cfg = build_cfg(k)
    assert len(cfg.blocks) == 3 and cfg.blocks[0].succs == [2, 1] and cfg.blocks[2].preds == [0, 1]


def test_unknown_opcode_is_kept_as_other():
    src = ".version 8.0\n.target sm_80\n.address_size 64\n.entry e()\n{\n\tfrobnicate.x.y %r1, %r2;\n\tret;\n}\n"
    (k,) = parse_ptx(src).kernels
    assert k.body[0].opcode == "frobnicate"
    cls = classify(k.body[0])
    assert not cls.known and cls.type == "misc"


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        (".version 8.0\n.entry e(\n{\n", 3, 1),
        (".version 8.0\n.entry e()\n{\n\tadd.s32 %r1, %r2 %r3;\n}\n", 4, 19),
        (".version 8.0\n.entry e()\n{\n\tmov.u32 %r1, #;\n}\n", 4, 15),
        (".version 8.0\n.entry e()\n{\n\tret;\n", 5, 1),
        ("garbage here\n", 1, 1),
        (".version 8.0\n.entry e()\n{\n\t.reg .b32 %r<;\n}\n", 4, 15),
    ],
)
def test_malformed_ptx_raises_positioned_error(text, line, column):
    with pytest.raises(PtxSyntaxError) as info:
        parse_ptx(text)
    assert (info.value.line, info.value.column) == (line, column)
    assert info.value.message


def test_binary_input_is_a_syntax_error():
    with pytest.raises(PtxSyntaxError, match="binary"):
        parse_ptx(".version 8.0\n\x00\x01\x02")


WARP_SZ_PTX = (".version 8.0\n.target sm_80\n.address_size 64\n.entry k()\n{\n\t.reg .b32 %r<4>;\n"
               "\tmov.u32 \t%r1, WARP_SZ;\n\tdiv.u32 %r2, %r1, WARP_SZ; add.u32 %r3, %r2, 1;\n\tret;\n}\n")


def test_warp_sz_is_the_number_32_on_both_parse_paths():
    """`mov.u32 %r1, WARP_SZ;` (a plain instruction line) and an operand read token by token (two instructions
    on one line) both give 32."""
    fn = parse_ptx(WARP_SZ_PTX).kernels[0]
    mov, div = fn.body[0], fn.body[1]
    assert mov.srcs == (Imm(32, "WARP_SZ"),)
    assert div.srcs[1] == Imm(32, "WARP_SZ")


def test_a_non_ascii_file_name_is_decoded_from_nvccs_octal_escapes():
    """nvcc writes `kérnel ü.cu` as `k\\303\\251rnel \\303\\274.cu`: the octal escapes are UTF-8 bytes."""
    text = WARP_SZ_PTX + '\t.file\t1 "/tmp/dir with space/k\\303\\251rnel \\303\\274.cu"\n'
    assert parse_ptx(text).files[1] == "/tmp/dir with space/kérnel ü.cu"
