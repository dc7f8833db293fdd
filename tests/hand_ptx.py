"""A hand-written PTX kernel for unit tests of the analyses: one `.entry k(u64 pointer, u32 count)` with
register banks and a 4 KiB shared array declared, the test's body placed inside it.

The `.target` line is informational here: the parser records it and no analysis reads it (the pipeline reads
the target only from text it hands to ptxas), so the tests hold for any architecture."""

from __future__ import annotations

from kerncast.analysis.cfg import Cfg, build_cfg
from kerncast.analysis.loops import LoopForest, find_loops
from kerncast.analysis.ptx import parse_ptx
from kerncast.analysis.ptx.model import Function, Module

HEAD = """.version 7.8
.target sm_75
.address_size 64
.visible .entry k(
    .param .u64 k_param_0,
    .param .u32 k_param_1
)
{
    .reg .pred %p<8>;
    .reg .b32 %r<40>;
    .reg .b64 %rd<40>;
    .reg .f32 %f<8>;
    .shared .align 4 .b8 tile[4096];
"""


def kernel(body: str) -> tuple[Module, Function, Cfg, LoopForest]:
    """The module, function, CFG and loop forest of `body` (PTX statements) placed in `HEAD`'s kernel."""
    module = parse_ptx(HEAD + body + "\n    ret;\n}\n")
    fn = module.kernels[0]
    cfg = build_cfg(fn)
    return module, fn, cfg, find_loops(cfg)
