"""PFEA feature extraction on hand-built PTX, both definitions, every count worked out by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.power.features import extract_features, feature_instructions
from kerncast.analysis.ptx import parse_ptx

PTX = """.version 7.0
.target sm_35
.address_size 64
.visible .entry k(.param .u64 p)
{
 .reg .f32 %f<3>; .reg .b64 %rd<3>; .reg .b32 %r<3>; .reg .pred %p<2>;
 ld.param.u64 %rd1, [p];
 mov.u32 %r1, %tid.x;
 setp.gt.s32 %p1, %r1, 10;
 @%p1 bra DONE;
 ld.global.f32 %f1, [%rd1];
 add.f32 %f2, %f1, %f1;
 shl.b32 %r2, %r1, 2;
 st.global.f32 [%rd1], %f2;
 st.shared.f32 [%rd1], %f2;
DONE:
 ret;
}
"""
# 26 blocks x 256 threads on K20 (13 SMs): W = ceil(ceil(26/13*256)/2048) = ceil(512/2048) = 1 wave.
LAUNCH = SimpleNamespace(grid=(26, 1, 1), block=(256, 1, 1), dynamic_shared_bytes=0)


@pytest.fixture(scope="module")
def kernel():
    m = parse_ptx(PTX)
    return m, m.functions[0]


def test_dataset_definition(kernel) -> None:
    m, f = kernel
    x = extract_features(f, m, LAUNCH, load_profile("k20"), definition="dataset")
    assert x["comp_inst_kernel"] == 3  # mov, setp, add (shl is not a dataset compute op)
    assert x["glob_inst_kernel"] == 3  # ld.param, ld.global, st.global
    assert x["shar_inst_kernel"] == 0  # st.shared was never matched by the dataset's extractor
    assert x["misc_inst_kernel"] == 2  # bra, ret
    assert x["glob_load_sm"] == 1 and x["glob_store_sm"] == 1 and x["branch"] == 1
    assert x["total_inst"] == 3 + 2 + 0 + 2  # simulated global count excludes ld.param
    assert x["inst_issue_cycles"] == round(26 * 256 * 7 / 65536)
    assert x["grid_size"] == 26 and x["block_size"] == 256


def test_thesis_definition(kernel) -> None:
    m, f = kernel
    x = extract_features(f, m, LAUNCH, load_profile("k20"), definition="thesis")
    assert x["comp_inst_kernel"] == 4  # mov, setp, add, shl
    assert x["glob_inst_kernel"] == 2  # ld.global, st.global
    assert x["shar_inst_kernel"] == 1 and x["avg_shar_lat"] == 36.0
    assert x["misc_inst_kernel"] == 2


def test_feature_instructions(kernel) -> None:
    _, f = kernel
    assert [f.body[i].full_opcode for i in feature_instructions(f, "l_gstore")] == ["st.global.f32"]
    assert len(feature_instructions(f, "comp_inst_kernel")) == 3
    assert feature_instructions(f, "util") == []  # launch features belong to no instruction
