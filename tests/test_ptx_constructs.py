"""The PTX constructs of real-world CUDA: texture/surface/tensormap operands, `::` qualifiers, inline-asm scopes
with predicate pairs, call prototypes and indirect calls, weak/extern/alias functions, pragmas, debug sections.

Each construct is parsed (operands asserted), classified (`data/isa.toml`), and, where it touches memory,
counted in the memory analysis. The sources are the repository's own: `tests/ptx_constructs/constructs.cu`
compiled by nvcc at sm_90, and hand-written PTX for the Hopper/Blackwell instructions nvcc only emits from
library headers. A file with one malformed function still yields its other kernels.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.cfg import build_cfg
from kerncast.analysis.compile import RDC_NOTE, CompileOptions, compile_cuda
from kerncast.analysis.isa import classify, memory_touch
from kerncast.analysis.loops import find_loops
from kerncast.analysis.memory import analyze_memory
from kerncast.analysis.options import AnalysisOptions, Thresholds
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.ptx import PtxSyntaxError, parse_ptx
from kerncast.analysis.ptx.model import Addr, Imm, PredPair, Reg, Sym, Vec
from kerncast.analysis.stages.structure import DEVICE_LAUNCH_NOTE
from source_lines import line_of

HERE = Path(__file__).resolve().parent / "ptx_constructs"


def _memory(module, fn):
    cfg = build_cfg(fn)
    return analyze_memory(module, fn, cfg, find_loops(cfg), (128, 1, 1), {}, {}, Thresholds())


def _by_prefix(fn, prefix: str):
    found = [i for i in fn.body if i.full_opcode.startswith(prefix)]
    assert found, f"no {prefix} in {fn.name}: {[i.full_opcode for i in fn.body]}"
    return found


@pytest.fixture(scope="module")
def sm90_module(nvcc_available):
    result = compile_cuda(HERE / "constructs.cu", options=CompileOptions(arch="sm_90"), with_resources=False)
    assert result.ok, result.diagnostics
    module = parse_ptx(result.ptx)
    assert module.errors == []
    return module


def _kernel(module, part: str):
    (fn,) = [k for k in module.kernels if part in k.name]
    return fn


def test_texture_fetch_with_vector_destination_and_coordinates(sm90_module):
    fn = _kernel(sm90_module, "tex_fetch_1d")
    (tex,) = _by_prefix(fn, "tex.1d.v4.f32.s32")
    assert isinstance(tex.operands[0], Vec) and len(tex.operands[0].items) == 4
    assert isinstance(tex.operands[1], Addr) and isinstance(tex.operands[1].base, Reg)
    assert classify(tex).type == "global" and memory_touch(tex).space == "global"
    fn2 = _kernel(sm90_module, "9tex_fetch")
    (tex2,) = _by_prefix(fn2, "tex.2d.v4.f32.f32")
    accesses = {a.index: a for a in _memory(sm90_module, fn2).accesses}
    tex_access = accesses[tex2.index]
    assert (tex_access.space, tex_access.kind, tex_access.width_bytes) == ("global", "load", 16)
    assert not tex_access.known  # a texture handle is no address: no coalescing claim


def test_surface_store_is_a_global_store(sm90_module):
    fn = _kernel(sm90_module, "surf_store")
    (sust,) = _by_prefix(fn, "sust.b.2d.b32.trap")
    assert isinstance(sust.operands[0], Addr) and isinstance(sust.operands[1], Vec)
    assert not sust.has_dest
    access = {a.index: a for a in _memory(sm90_module, fn).accesses}[sust.index]
    assert (access.space, access.kind) == ("global", "store")


def test_inline_asm_scope_with_predicate_output_pair(sm90_module):
    fn = _kernel(sm90_module, "scan_pred_pair")
    shfls = _by_prefix(fn, "shfl.sync.up.b32")
    assert len(shfls) == 5  # the unrolled d = 1, 2, 4, 8, 16
    pair = shfls[0].operands[0]
    assert pair == PredPair(Reg("r0"), Reg("p"))
    guarded = [i for i in fn.body if i.guard is not None and i.guard.reg == "p"]
    assert guarded and guarded[0].operands[0] == Reg("r0")  # scope registers are registers, not symbols


def test_indirect_call_through_a_prototype(sm90_module):
    fn = _kernel(sm90_module, "indirect_call")
    (call,) = _by_prefix(fn, "call")
    assert isinstance(call.operands[1], Reg)  # the function pointer
    assert call.operands[-1] == Sym("prototype_0")
    assert classify(call).resource == "BRANCH"


def test_hopper_bulk_copy_and_mbarrier_with_double_colon_qualifiers(sm90_module):
    fn = _kernel(sm90_module, "bulk_copy")
    (copy,) = _by_prefix(fn, "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes")
    assert copy.modifiers[2:4] == ("shared::cta", "global") and copy.space == "shared"
    (arrive,) = _by_prefix(fn, "mbarrier.arrive.expect_tx.shared::cta.b64")
    assert arrive.has_dest and arrive.operands[0] == Reg(arrive.operands[0].name)
    accesses = {a.index: a for a in _memory(sm90_module, fn).accesses}
    assert (accesses[copy.index].space, accesses[copy.index].kind) == ("global", "load")
    assert (accesses[arrive.index].space, accesses[arrive.index].kind) == ("shared", "atomic")
    assert _by_prefix(fn, "fence.proxy.async.shared::cta")[0].space is None


@pytest.fixture(scope="module")
def hopper():
    return parse_ptx((HERE / "hopper.ptx").read_text(encoding="utf-8"))


def test_weak_extern_alias_functions_pragma_and_debug_sections(hopper):
    assert hopper.errors == []
    kinds = {f.name: (f.linkage, f.has_body) for f in hopper.functions}
    assert kinds == {"vprintf": ("extern", False), "_Z6weak_fi": ("weak", True), "_Z5aliasv": ("visible", False),
                     "hopper_kernel": ("visible", True)}
    weak = hopper.function("_Z6weak_fi")
    assert [p.name for p in weak.return_params] == ["func_retval0"]
    assert [k.name for k in hopper.kernels] == ["hopper_kernel"]
    assert {g.name for g in hopper.globals} == {"tmap"}
    assert hopper.files == {1: "/src/hopper.cu"}


@pytest.mark.parametrize(
    ("prefix", "itype", "touch"),
    [
        ("cp.async.bulk.tensor.2d.shared::cluster.global", "global", ("global", "load")),
        ("cp.async.bulk.global.shared::cta.bulk_group", "global", ("global", "store")),
        ("cp.reduce.async.bulk.global.shared::cta", "global", ("global", "atomic")),
        ("cp.async.bulk.commit_group", "global", None),
        ("mbarrier.try_wait.parity.shared::cta.b64", "misc", ("shared", "atomic")),
        ("tensormap.replace.tile.global_address.global", "misc", ("global", "store")),
        ("ld.global.L1::evict_last.L2::256B.f32", "global", None),  # analysed address by address
        ("wgmma.mma_async.sync.aligned", "compute", ("shared", "load")),
        ("wgmma.fence.sync.aligned", "compute", None),
        ("tcgen05.mma.cta_group::1.kind::f16", "compute", ("shared", "load")),
        ("tcgen05.alloc.cta_group::1", "misc", ("shared", "store")),
        ("tcgen05.ld.sync.aligned.32x32b.x2.b32", "compute", None),
        ("multimem.ld_reduce.relaxed.sys.global.add.f32", "global", ("global", "load")),
        ("multimem.st.relaxed.sys.global.f32", "global", ("global", "store")),
        ("st.async.shared::cluster", "shared", ("shared", "store")),
        ("fence.mbarrier_init.release.cluster", "misc", None),
        ("elect.sync", "misc", None),
    ],
)
def test_hopper_and_blackwell_opcodes_are_classified_with_their_memory(hopper, prefix, itype, touch):
    (fn,) = hopper.kernels
    ins = _by_prefix(fn, prefix)[0]
    cls = classify(ins)
    assert cls.known and cls.type == itype
    got = memory_touch(ins)
    assert (got.space, got.access) == touch if touch else got is None


def test_hopper_memory_analysis_counts_bulk_copies_and_tensor_core_reads(hopper):
    (fn,) = hopper.kernels
    res = _memory(hopper, fn)
    kinds = {(fn.body[a.index].opcode, a.space, a.kind) for a in res.accesses}
    assert ("cp", "global", "load") in kinds and ("cp", "global", "store") in kinds
    assert ("wgmma", "shared", "load") in kinds and ("multimem", "global", "store") in kinds
    assert ("st", "shared", "store") in kinds  # st.async into distributed shared memory
    assert ("st", "global", "store") in kinds and ("ld", "global", "load") in kinds
    bulk = next(a for a in res.accesses if fn.body[a.index].full_opcode.startswith("cp.async.bulk.global"))
    assert bulk.width_bytes == 4096


def test_hopper_operands(hopper):
    (fn,) = hopper.kernels
    (tensor_copy,) = _by_prefix(fn, "cp.async.bulk.tensor")
    assert isinstance(tensor_copy.operands[1], Addr) and tensor_copy.operands[1].base == Reg("%rd1")
    (elect,) = _by_prefix(fn, "elect.sync")
    assert elect.operands[0] == PredPair(Reg("%r8"), Reg("%p2")) and elect.has_dest
    (mma,) = _by_prefix(fn, "wgmma.mma_async")
    assert isinstance(mma.operands[0], Vec) and mma.operands[3] == Imm(1, "1")
    (call,) = _by_prefix(fn, "call")
    assert call.operands[1] == Reg("%rd6") and call.operands[-1] == Sym("prototype_0")


def test_one_malformed_function_costs_only_itself():
    module = parse_ptx((HERE / "one_bad_function.ptx").read_text(encoding="utf-8"))
    assert [k.name for k in module.kernels] == ["good_first", "good_last"]
    (err,) = module.errors
    assert (err.name, err.line, err.column) == ("broken_middle", 30, 20)
    assert "expected ';'" in err.message


def test_a_file_whose_only_function_is_malformed_still_raises():
    text = (HERE / "one_bad_function.ptx").read_text(encoding="utf-8")
    only_bad = text[text.index(".visible .entry broken_middle"):text.index(".visible .entry good_last")]
    with pytest.raises(PtxSyntaxError) as info:
        parse_ptx(".version 8.0\n.target sm_80\n.address_size 64\n" + only_bad)
    assert "expected ';'" in info.value.message


def test_pipeline_reports_the_malformed_function_and_analyses_the_others():
    report = analyze_file(HERE / "one_bad_function.ptx", options=AnalysisOptions(gpu="a100", arch="sm_80"))
    assert [k.mangled for k in report.kernels] == ["good_first", "good_last"]
    (err,) = [f for f in report.findings if f.code == "ptx-syntax-error"]
    assert err.severity == "error" and err.line == 30 and "broken_middle" in err.message
    assert all(k.instruction_count for k in report.kernels)


def test_opcodes_seen_in_public_code_are_classified():
    body = "\tbrkpt;\n\tbmsk.clamp.b32 %r1, %r2, %r3;\n\tvabsdiff4.u32.u32.u32.add %r1, %r2, %r3, %r4;\n\tret;\n"
    (k,) = parse_ptx(f".version 8.0\n.target sm_80\n.address_size 64\n.entry e()\n{{\n{body}}}\n").kernels
    classes = [classify(i) for i in k.body]
    assert all(c.known for c in classes)
    assert [c.type for c in classes] == ["misc", "compute", "compute", "misc"]


def test_device_side_launch_compiles_as_relocatable_code_with_ptxas_figures(nvcc_available):
    """A `<<<...>>>` in device code: nvcc is asked again with -rdc=true, ptxas runs in compile-only mode (the
    device runtime's launch functions are extern), and the parent says its figures leave out its children."""
    report = analyze_file(HERE / "device_launch.cu", options=AnalysisOptions(gpu="h100", lime=False))
    assert report.ok, [f.message for f in report.findings]
    assert RDC_NOTE in report.notes
    parent, child = report.kernel("scaleParent"), report.kernel("scaleChild")
    assert parent is not None and child is not None
    assert parent.registers and child.registers, "ptxas assembled the relocatable PTX"
    assert DEVICE_LAUNCH_NOTE in parent.notes and DEVICE_LAUNCH_NOTE not in child.notes
    assert child.launch is not None and child.launch.block.value == (256, 1, 1)  # the device-side launch site


def test_relocatable_ptx_with_extern_functions_gets_ptxas_figures(nvcc_available):
    """PTX compiled with -rdc=true by the user (extern device-runtime functions) is assembled, not refused."""
    result = compile_cuda(HERE / "device_launch.cu", options=CompileOptions(arch="sm_90", extra_flags=["-rdc=true"]))
    assert result.ok and result.notes == [], "the user's own -rdc=true needs no retry"
    assert ".extern .func" in (result.ptx or "")
    assert set(result.resources) == {"_Z10scaleChildPfi", "_Z11scaleParentPfi"}


def test_managed_variables_parse_and_their_kernel_is_analysed(nvcc_available):
    """`__managed__` variables are `.global .attribute(.managed)` declarations in nvcc's PTX: they parse as
    global variables that carry the attribute, and their file is analysed with its findings on its lines."""
    path = HERE / "managed.cu"
    result = compile_cuda(path, options=CompileOptions(arch="sm_90"), with_resources=False)
    assert result.ok and ".attribute(.managed)" in (result.ptx or "")
    module = parse_ptx(result.ptx or "")
    managed = {d.name: d for d in module.globals if d.attributes == ("managed",)}
    assert set(managed) == {"hits", "bias"}
    assert (managed["hits"].space, managed["hits"].type) == ("global", "u32")
    assert (managed["bias"].space, managed["bias"].array) == ("global", (1024,))
    report = analyze_file(path, options=AnalysisOptions(gpu="h100", lime=False))
    assert report.ok, [f.message for f in report.findings]
    (k,) = report.kernels
    assert k.line == line_of(path, "__global__ void strided_with_bias")
    assert k.launch is not None and k.launch.grid.value == (1024, 1, 1)
    strided = [f for f in k.findings if f.code == "uncoalesced-global"]
    assert [f.line for f in strided] == [line_of(path, "in[i * 32]")]


def test_attribute_lists_of_other_kinds_parse():
    text = (".version 8.0\n.target sm_90\n.address_size 64\n"
            ".global .attribute(.unified(19,95)) .align 8 .u64 shared_with_host;\n"
            ".visible .global .attribute(.managed) .align 4 .f32 x[4] = {1.0, 2.0, 3.0, 4.0};\n")
    unified, x = parse_ptx(text).globals
    assert unified.attributes == ("unified",) and unified.type == "u64"
    assert x.attributes == ("managed",) and x.array == (4,) and x.initializer is not None
    with pytest.raises(PtxSyntaxError, match="attribute"):
        parse_ptx(".version 8.0\n.target sm_90\n.address_size 64\n.global .attribute(.managed .u32 y;\n")


INLINED_HELPER = """\
__device__ __forceinline__ float twice(float x)
{
    return 2.0f * x;
}

__global__ void scale(float *data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        data[i] = twice(data[i]);
    }
}
"""


def test_a_kernel_is_placed_at_its_definition_not_at_an_inlined_helper_above_it(nvcc_available, tmp_path):
    """The PTX names the helper's line 3 for the inlined multiply; the kernel (lens, resource findings) stays at
    its own definition, lines 6-12."""
    path = tmp_path / "inlined.cu"
    path.write_text(INLINED_HELPER)
    report = analyze_file(path, options=AnalysisOptions(gpu="h100", lime=False))
    kernel = report.kernel("scale")
    assert kernel is not None and kernel.line is not None
    assert 6 <= kernel.line <= 8, kernel.line
