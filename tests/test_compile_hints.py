"""Hints for APIs that older CUDA code uses and the current toolkit removed (analysis/data/compile_hints.toml).

The table's claims are checked against the real toolkit: every removed name it lists makes nvcc fail with the
message the hint is keyed on, and every replacement it names compiles.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.compile_hints import hint_for
from kerncast.analysis.pipeline import AnalysisOptions, analyze_file

TABLE = tomllib.loads((Path(__file__).resolve().parent.parent / "analysis" / "data" / "compile_hints.toml")
                      .read_text(encoding="utf-8"))
THREAD = TABLE["thread_functions"]["use"]
PROPS = TABLE["device_properties"]["use"]
REFS = TABLE["references"]["use"]


def test_hints_name_the_replacement_and_the_release() -> None:
    assert hint_for('identifier "cudaThreadSynchronize" is undefined') == \
        "cudaThreadSynchronize was removed in CUDA 13; use cudaDeviceSynchronize()"
    clock = hint_for('class "cudaDeviceProp" has no member "clockRate"')
    assert clock is not None and "cudaDevAttrClockRate" in clock and "CUDA 13" in clock
    texture = hint_for("texture is not a template")
    assert texture is not None and "CUDA 12" in texture and "cudaTextureObject_t" in texture


def test_no_hint_for_other_errors() -> None:
    assert hint_for('identifier "fp" is undefined') is None  # a name the file itself should define
    assert hint_for('class "cudaDeviceProp" has no member "clockrate"') is None  # a typo, not a removal
    assert hint_for('class "Foo" has no member "clockRate"') is None
    assert hint_for("expected a \";\"") is None


def _legacy_source() -> str:
    """Every removed API the table lists, used the way old code used it."""
    calls = "\n".join(f"    {name}();" for name in THREAD)
    fields = "\n".join(f"    (void)prop.{name};" for name in PROPS)
    refs = "\n".join(f"{kind}<float, 1> legacy_{kind};" for kind in REFS)
    return f"{refs}\n\nint main()\n{{\n    cudaDeviceProp prop;\n{fields}\n{calls}\n    return 0;\n}}\n"


def test_each_removed_api_fails_with_its_hint(nvcc_available, tmp_path) -> None:
    path = tmp_path / "legacy.cu"
    path.write_text(_legacy_source())
    report = analyze_file(path, options=AnalysisOptions(lime=False))
    errors = [f.message for f in report.findings if f.severity == "error"]
    assert not report.ok
    for name, use in THREAD.items():
        assert any(m.startswith(f'identifier "{name}" is undefined — ') and use in m for m in errors), name
    for name, use in PROPS.items():
        assert any(f'no member "{name}" — cudaDeviceProp.{name} was removed' in m and use in m for m in errors), name
    for kind in REFS:
        assert any(m.startswith(f"{kind} is not a template — {kind} references were removed") for m in errors), kind


def _replacement_source() -> str:
    """A translation unit that names every replacement the table gives: functions, attributes, fields, types."""
    texts = [*THREAD.values(), *PROPS.values(), *REFS.values()]
    names = sorted({n for t in texts for n in re.findall(r"\bcuda[A-Z]\w*", t)})
    lines = [f"using T{i} = {n};" if n.endswith("_t") else f"using T{i} = decltype({n});" for i, n in enumerate(names)]
    fields = sorted({m for t in PROPS.values() for m in re.findall(r"the (\w+) field", t)})
    lines += [f"using F{i} = decltype(cudaDeviceProp::{f});" for i, f in enumerate(fields)]
    lines.append("__global__ void k(cudaTextureObject_t t, float *o) { o[0] = tex1Dfetch<float>(t, 0); }")
    return "\n".join(lines) + "\n"


def test_every_replacement_compiles(nvcc_available, tmp_path) -> None:
    path = tmp_path / "replacements.cu"
    path.write_text(_replacement_source())
    result = compile_cuda(path, options=CompileOptions(arch="sm_90"), with_resources=False)
    assert result.ok, [d.message for d in result.diagnostics]
