"""Launch inference: folding host expressions, finding <<<>>> sites and annotations, and per-field sources."""

from __future__ import annotations

from pathlib import Path

import pytest
from kerncast.analysis.cexpr import ConstEnv, Token, mask_source, tokenize
from kerncast.analysis.launch import (
    LaunchOverrides,
    find_annotations,
    find_kernel_definitions,
    find_launch_sites,
    infer_launch,
    parse_dim,
    split_kernel_name,
)
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def example(name: str) -> str:
    return (EXAMPLES / name).read_text()


def fold(source: str, expr: str):
    """Fold `expr` as if written at the end of `source`."""
    full = source + "\n"
    return ConstEnv(full).fold(expr, len(full))


# ------------------------------------------------------------------------------------------ parse_dim


@pytest.mark.parametrize(("text", "dims"), [
    ("1024", (1024, 1, 1)), ("32,8", (32, 8, 1)), ("32x8x1", (32, 8, 1)), (" 4 , 2 , 3 ", (4, 2, 3)),
    ("16X16", (16, 16, 1)),
])
def test_parse_dim_accepts_one_to_three_sizes(text, dims):
    assert parse_dim(text) == dims


@pytest.mark.parametrize("text", ["", "0", "1,2,3,4", "a", "-4", "32,,8", "3.5"])
def test_parse_dim_rejects_bad_text_with_a_message(text):
    with pytest.raises(ValueError, match="got"):
        parse_dim(text)


def test_overrides_from_strings_parse_every_flag_and_name_the_bad_one():
    ov = LaunchOverrides.from_strings(grid="64,2", block="128", smem="4096", loops="7", params=["n=10", "2=5"])
    assert (ov.grid, ov.block, ov.smem, ov.loops, ov.params) == ((64, 2, 1), (128, 1, 1), 4096, 7,
                                                                 {"n": 10, "2": 5})
    with pytest.raises(ValueError, match="--block"):
        LaunchOverrides.from_strings(block="zero")
    with pytest.raises(ValueError, match="NAME=INTEGER"):
        LaunchOverrides.from_strings(params=["n"])


# ------------------------------------------------------------------------------------------ the folder


@pytest.mark.parametrize(("expr", "value"), [
    ("0x1F", 31), ("017", 15), ("0b101", 5), ("1'000", 1000), ("256u", 256), ("1ull << 40", 1 << 40),
    ("(1 << 20) + 255) / 256".join(["(", ""]), 4096), ("-7 / 2", -3), ("-7 % 2", -1), ("7 % -2", 1),
    ("10 > 3 ? 4 : 5", 4), ("min(3, 9) + std::max(2, 8)", 11), ("sizeof(float4) * 3", 48),
    ("sizeof(double)", 8), ("sizeof(unsigned int)", 4), ("sizeof(float *)", 8), ("(unsigned)-1", 4294967295),
    ("static_cast<int>(40) / 3", 13), ("dim3(4, 2).y", 2), ("dim3(4).z", 1), ("!0 + ~0", 0),
])
def test_fold_integer_expressions(expr, value):
    assert fold("", expr).value == value


def test_fold_uses_defines_consts_and_dim3_members():
    src = """
#define N (1 << 10)
#define TILE 16
#define DIV_UP(a, b) (((a) + (b) - 1) / (b))
#define WORDS N * 2
constexpr int kRows = N / 4;
static const unsigned int kCols = 3;
int main() {
    const int width = 2048, height = 1000;
    dim3 threads(TILE, TILE);
    dim3 grid = dim3(DIV_UP(width, threads.x), DIV_UP(height, threads.y));
    dim3 one;
"""
    assert fold(src, "grid").value == (128, 63, 1)
    assert fold(src, "threads").value == (16, 16, 1)
    assert fold(src, "kRows * kCols").value == 768
    assert fold(src, "WORDS + 1").value == 2049  # macro text, not a parenthesised value: N * 2 + 1
    assert fold(src, "one").value == (1, 1, 1)


def test_fold_reports_the_unknown_name():
    result = fold("int main() { const int n = 4;", "(n + m - 1) / m")
    assert result.value is None and "'m'" in result.reason


def test_fold_refuses_variables_changed_after_their_declaration():
    src = "int main(int argc, char **argv) {\n int n = 64;\n n = atoi(argv[1]);\n int k = 32;\n dim3 b(8);\n b.x = 4;"
    changed = fold(src, "n")
    assert changed.value is None and "changed at line 3" in changed.reason
    assert fold(src, "k").value == 32  # not const, but never changed
    assert fold(src, "b").value is None


@pytest.mark.parametrize(("expr", "reason"), [
    ("2.5 % 2", "floating-point"), ("sizeof(Particle)", "sizeof(Particle)"), ("foo(3)", "foo"),
    ("a[2]", "subscript"), ("1 / 0", "division by zero"), ("(", "incomplete"),
])
def test_fold_unknown_constructs_say_why(expr, reason):
    result = fold("int a[4];", expr)
    assert result.value is None and reason in result.reason


def test_fold_respects_scopes():
    src = "int f() { const int n = 1; return n; }\nint main() { const int n = 2; "
    assert fold(src, "n").value == 2
    assert ConstEnv(src).fold("n", src.index("return")).value == 1


def test_masking_hides_comments_and_strings_but_keeps_offsets():
    src = 'a /* x <<< */ "<<<\\"" // c\nb'
    masked, comments = mask_source(src)
    assert len(masked) == len(src) and "<<<" not in masked and masked.endswith("\nb")
    assert [c.text for c in comments] == ["/* x <<< */", "// c"]


@pytest.mark.parametrize(("src", "masked", "comments"), [
    # digit separators are no character literals; a char literal's contents go
    ("int n = 1'000'000; char c = ';';", "int n = 1'000'000; char c = ' ';", []),
    # a comment marker inside a string is text; a quote inside a comment is comment
    ('s = "a // b"; // it\'s\nx', 's = "      ";        \nx', ["// it's"]),
    # a `//` comment goes on over a backslash-newline (a carriage return before it is blanked too)
    ("a // one \\\ntwo\nb // c \\\r\nd\ne", "a         \n   \nb        \n \ne", ["// one \\\ntwo", "// c \\\r\nd"]),
    # an unterminated block comment runs to the end, newlines kept
    ("a /* b\nc", "a     \n ", ["/* b\nc"]),
    # an unclosed literal ends at its line (its last character is kept); an escape skips a character
    ("x = \"ab\ny = '\\\\''; z", "x = \" b\ny = '  ''  z", []),
    # nothing to mask: the text comes back as it is
    ("k<<<1, 2>>>();", "k<<<1, 2>>>();", []),
    ("", "", []),
])
def test_masking_edge_cases(src, masked, comments):
    out, found = mask_source(src)
    assert out == masked
    assert [c.text for c in found] == comments
    assert all(src[c.start:c.end] == c.text for c in found)


def test_c_tokens_kinds_offsets_and_equality():
    toks = tokenize("dim3 g(n/ 2, 0x1F'u);  k<<<g, b>>>", base=10)
    assert [(t.kind, t.text, t.offset) for t in toks] == [
        ("id", "dim3", 10), ("id", "g", 15), ("op", "(", 16), ("id", "n", 17), ("op", "/", 18),
        ("num", "2", 20), ("op", ",", 21), ("num", "0x1F'u", 23), ("op", ")", 29), ("op", ";", 30),
        ("id", "k", 33), ("op", "<<<", 34), ("id", "g", 37), ("op", ",", 38), ("id", "b", 40), ("op", ">>>", 41)]
    assert toks[1] == Token("id", "g", 15) and hash(toks[1]) == hash(Token("id", "g", 15))
    assert repr(toks[0]) == "Token(kind='id', text='dim3', offset=10)"
    with pytest.raises(AttributeError):
        toks[0].text = "x"  # type: ignore[misc]


# ------------------------------------------------------------------------------------------ sites


EXPECTED_SITES = {
    "vector_add.cu": [("vectorAdd", (4096, 1, 1), (256, 1, 1), 0)],
    "matmul.cu": [("MatrixMulCUDA", (32, 32, 1), (32, 32, 1), 0), ("matmulNaive", (32, 32, 1), (32, 32, 1), 0)],
    "transpose.cu": [(k, (64, 64, 1), (32, 8, 1), 0) for k in ("transposeNaive", "transposeTiled",
                                                               "transposePadded")],
    "reduction.cu": [(k, (16384, 1, 1), (256, 1, 1), 1024) for k in ("reduceInterleaved", "reduceStrided",
                                                                     "reduceSequential")],
    "saxpy.cu": [("saxpy", (4096, 1, 1), (256, 1, 1), 0), ("advanceParticles", (131072, 1, 1), (128, 1, 1), 0)],
    "loops.cu": [("fixedSum", (3, 1, 1), (256, 1, 1), 0), ("rowSum", (4, 1, 1), (256, 1, 1), 0),
                 ("treeSum", (1, 1, 1), (256, 1, 1), 0), ("ragged", (1000, 1, 1), (1, 1, 1), 0)],
}


@pytest.mark.parametrize("name", sorted(EXPECTED_SITES))
def test_every_example_launch_is_found_and_folded(name):
    sites = find_launch_sites(example(name))
    got = [(s.kernel, s.grid.value, s.block.value, s.smem.value) for s in sites]
    assert got == EXPECTED_SITES[name]


def test_every_launch_in_the_examples_folds():
    for path in sorted(EXAMPLES.glob("*.cu")):
        for site in find_launch_sites(path.read_text()):
            assert site.grid.known and site.block.known and site.smem.known, (path.name, site)


def test_site_details_template_arguments_and_call_arguments():
    sites = find_launch_sites(example("matmul.cu"))
    mm = sites[0]
    assert (mm.line, mm.template_args, mm.template_values[0].value) == (60, ["BLOCK_SIZE"], 32)
    assert mm.args == ["C", "A", "B", "n", "n"]
    assert [a.value for a in mm.arg_values][3:] == [1024, 1024]
    assert mm.config_text == "<<<grid, threads>>>"


def test_multi_line_template_launch_with_stream_and_comments():
    src = """
#define B 64
template <typename T, int W> __global__ void k(T *p, int n) {}
int main() {
    const int n = 1 << 12;
    cudaStream_t s;
    const char *msg = "k<<<1, 1>>>(0, 0);";  // k<<<2, 2>>>(0, 0);
    k<float, 2 * B>
        <<<(n + B - 1) / B,   // blocks
           B, B * sizeof(float), s>>>(nullptr,
                                     n);
}
"""
    sites = find_launch_sites(src)
    assert len(sites) == 1
    site = sites[0]
    assert (site.kernel, site.line, site.template_args) == ("k", 8, ["float", "2 * B"])
    assert site.template_values[1].value == 128
    assert (site.grid.value, site.block.value, site.smem.value) == ((64, 1, 1), (64, 1, 1), 256)
    assert site.stream_expr == "s" and site.args == ["nullptr", "n"]


def test_unknown_launch_values_keep_their_reason():
    src = "int main(int argc, char **argv) {\n int n = atoi(argv[1]);\n k<<<(n + 255) / 256, 256>>>(n);\n}"
    site = find_launch_sites(src)[0]
    assert site.grid.value is None and "'n'" in site.grid.reason and "changed" not in site.grid.reason
    assert site.block.value == (256, 1, 1)


def test_kernel_definitions_with_parameters_and_templates():
    defs = {d.name: d for d in find_kernel_definitions(example("matmul.cu"))}
    assert defs["MatrixMulCUDA"].params == ["C", "A", "B", "wA", "wB"]
    assert defs["MatrixMulCUDA"].template_params == "int TILE"
    assert defs["matmulNaive"].params == ["A", "B", "C", "n"]
    src = "__global__ void __launch_bounds__(128) k(int, float *__restrict__ out, int n = 4) {}\n" \
          "__global__ void v(void);"
    got = {d.name: (d.params, d.is_definition) for d in find_kernel_definitions(src)}
    assert got == {"k": ([None, "out", "n"], True), "v": ([], False)}


@pytest.mark.parametrize(("display", "base", "args"), [
    ("vectorAdd", "vectorAdd", None), ("MatrixMulCUDA<32>", "MatrixMulCUDA", ["32"]),
    ("void ns::k<float, (int)8>(float*, int)", "k", ["float", "(int)8"]),
])
def test_split_kernel_name(display, base, args):
    assert split_kernel_name(display) == (base, args)


# ------------------------------------------------------------------------------------------ annotations


ANNOTATED = """
#define N 4096
// kerncast: block=64 n=N
template <int T>
__global__ void scale(float *x, int n) {}

__global__ void other(float *x, int n) {}

int main() {
    const int n = 100;
    /* kerncast: grid=7,2 */
    // an ordinary comment
    scale<8><<<n, 128, 0>>>(0, n);
    other<<<n, 32>>>(0, n);  // kerncast: loops=3 smem=512
    // kerncast: bogus grid=0 1x=2
    int unused = 0;
    other<<<2 * n, 32>>>(0, n);
}
"""


def test_annotations_bind_to_the_kernel_or_launch_below_them():
    anns = find_annotations(ANNOTATED)
    summary = [(a.line, a.target, a.target_name, a.target_line) for a in anns]
    assert summary == [(3, "kernel", "scale", 5), (11, "launch", "scale", 13), (14, "launch", "other", 14),
                       (15, None, None, None)]
    assert (anns[0].block, anns[0].params) == ((64, 1, 1), {"n": 4096})
    assert anns[1].grid == (7, 2, 1)
    assert (anns[2].loops, anns[2].smem) == (3, 512)
    assert len(anns[3].errors) == 3 and anns[3].grid is None


# ------------------------------------------------------------------------------------------ sources


def test_launch_site_is_the_source_when_nothing_overrides_it():
    launch = infer_launch("vectorAdd", example("vector_add.cu"))
    assert (launch.grid.value, launch.block.value, launch.dynamic_shared_bytes.value) == ((4096, 1, 1),
                                                                                         (256, 1, 1), 0)
    assert {launch.grid.source, launch.block.source, launch.dynamic_shared_bytes.source} == {"launch-site"}
    assert launch.grid.line == 21 and "at line 21" in launch.grid.detail
    assert launch.params["n"].value == 1 << 20 and launch.params["n"].source == "launch-site"
    assert (launch.threads_per_block, launch.blocks, launch.total_threads) == (256, 4096, 1 << 20)
    assert launch.assumptions == []


def test_dynamic_shared_memory_from_the_launch():
    launch = infer_launch("reduceSequential", example("reduction.cu"))
    assert launch.dynamic_shared_bytes.value == 256 * 4 and launch.dynamic_shared_bytes.source == "launch-site"


def test_annotation_above_the_launch_sets_loops():
    launch = infer_launch("saxpy", example("saxpy.cu"))
    assert (launch.loops.value, launch.loops.source, launch.loops.line) == (16, "annotation", 34)
    assert launch.grid.source == "launch-site"


def test_annotation_above_the_kernel_and_above_the_launch():
    launch = infer_launch("scale<8>", ANNOTATED)
    assert (launch.block.value, launch.block.source, launch.block.line) == ((64, 1, 1), "annotation", 3)
    assert (launch.grid.value, launch.grid.source, launch.grid.line) == ((7, 2, 1), "annotation", 11)
    assert launch.dynamic_shared_bytes.source == "launch-site"
    # the kernel annotation names n; it outranks the call site's argument
    assert (launch.params["n"].value, launch.params["n"].source) == (4096, "annotation")


def test_annotation_above_the_launch_wins_over_the_one_above_the_kernel():
    src = "// kerncast: block=64\n__global__ void k() {}\nint main() {\n// kerncast: block=32\nk<<<1, 8>>>();\n}"
    launch = infer_launch("k", src)
    assert (launch.block.value, launch.block.line) == ((32, 1, 1), 4)


def test_trailing_annotation_and_several_different_launch_sites():
    launch = infer_launch("other", ANNOTATED)
    assert (launch.grid.value, launch.loops.value, launch.dynamic_shared_bytes.value) == ((100, 1, 1), 3, 512)
    assert any("line 17" in a and "<<<2 * n, 32>>>" in a for a in launch.assumptions)


def test_settings_override_annotations_and_cli_overrides_settings():
    settings = LaunchOverrides(grid=(9, 1, 1), block=(96, 1, 1), loops=11, params={"n": 5}, source="setting")
    cli = LaunchOverrides(block=(48, 1, 1), params={"1": 6})
    launch = infer_launch("scale<8>", ANNOTATED, overrides=cli, settings=settings)
    assert (launch.grid.value, launch.grid.source) == ((9, 1, 1), "setting")
    assert (launch.block.value, launch.block.source) == ((48, 1, 1), "cli")
    assert (launch.loops.value, launch.loops.source) == (11, "setting")
    assert (launch.params["n"].value, launch.params["n"].source) == (6, "cli")
    assert launch.param(1) is launch.params["n"]
    assert launch.dynamic_shared_bytes.source == "launch-site"


def test_reqntid_gives_the_block_when_the_source_does_not():
    launch = infer_launch("k", "__global__ void k() {}", reqntid=(128, 2))
    assert (launch.block.value, launch.block.source, launch.block.detail) == ((128, 2, 1), "ptx",
                                                                             ".reqntid directive")
    assert launch.grid.source == "default"


def test_defaults_are_stated_as_assumptions():
    launch = infer_launch("lonely", None)
    assert (launch.grid.source, launch.block.source, launch.dynamic_shared_bytes.source, launch.loops.source) \
        == ("default",) * 4
    text = " ".join(launch.assumptions)
    assert "grid" in text and "block" in text and "--grid" in text and "default" in text


def test_defaults_can_be_left_unknown():
    launch = infer_launch("lonely", "", default_grid=None)
    assert launch.grid.value is None and launch.blocks is None and launch.total_threads is None
    assert launch.to_json()["grid"] is None


def test_unfoldable_launch_falls_back_with_the_reason():
    src = "__global__ void k(int n) {}\nint main(int c, char **v) {\n int n = atoi(v[1]);\n" \
          " k<<<(n + 255) / 256, 256>>>(n);\n}"
    launch = infer_launch("k", src)
    assert launch.grid.source == "default" and launch.block.source == "launch-site"
    assert any("(n + 255) / 256" in a and "'n'" in a for a in launch.assumptions)
    assert "n" not in launch.params


def test_template_arguments_select_the_launch():
    src = example("matmul.cu")
    launch = infer_launch("MatrixMulCUDA<32>", src)
    assert launch.grid.source == "launch-site" and launch.params["wA"].value == 1024
    other = infer_launch("void MatrixMulCUDA<16>(float*, float const*, float const*, int, int)", src)
    assert other.grid.source == "default"
    assert any("other template arguments" in a for a in other.assumptions)


def test_template_type_arguments_match_through_aliases_and_namespaces():
    """The demangled name spells `half` as `__half`, `uint32_t` as `unsigned int`, and qualifies a type the
    launch names after a `using namespace`: each launch still finds its own kernel, and no other."""
    src = """
template <typename T, typename U> __global__ void k(T *p, U *q) {}
int main() {
    k<half, wmma::precision::tf32><<<10, 64>>>(0, 0);
    k<uint32_t, float><<<20, 128>>>(0, 0);
}
"""
    first = infer_launch("k<__half, nvcuda::wmma::precision::tf32>", src)
    second = infer_launch("k<unsigned int, float>", src)
    neither = infer_launch("k<float, float>", src)
    assert (first.grid.value, first.block.value) == ((10, 1, 1), (64, 1, 1))
    assert (second.grid.value, second.block.value) == ((20, 1, 1), (128, 1, 1))
    assert neither.grid.source == "default" and any("other template arguments" in a for a in neither.assumptions)


def test_unknown_parameter_names_are_reported_not_applied():
    launch = infer_launch("vectorAdd", example("vector_add.cu"), LaunchOverrides(params={"m": 3, "9": 1}))
    assert "m" not in launch.params and "9" not in launch.params
    assert sum("not a parameter of vectorAdd" in a for a in launch.assumptions) == 2


def test_to_json_reports_values_and_sources():
    data = infer_launch("transposeTiled", example("transpose.cu")).to_json()
    assert data["grid"] == [64, 64, 1] and data["block"] == [32, 8, 1] and data["dynamic_shared_bytes"] == 0
    assert data["source"]["grid"] == "launch-site" and data["source"]["params"] == {"width": "launch-site",
                                                                                   "height": "launch-site"}
    assert data["params"] == {"width": 2048, "height": 2048} and data["assumptions"] == []


@pytest.mark.parametrize("junk", [
    "\x00\xff<<<", "k<<<", "k<<<1>>>", "k<<<(1, 2>>>()", "}}}{{{ <<< >>> ((", "#define A A\nk<<<A, A>>>();",
    "#define F(x) F(x)\nk<<<F(1), 1>>>();", "const int a = b, b = a;\nk<<<a, b>>>();", "'unterminated\n/*",
    "template <> > > __global__ void (", "k<<<1 ? : 2, 3>>>();",
])
def test_bad_input_never_raises(junk):
    find_launch_sites(junk)
    find_annotations(junk)
    find_kernel_definitions(junk)
    launch = infer_launch("k", junk)
    assert launch.block.value is not None


# ------------------------------------------------------------------------------------------ included kernels

INCLUDED_KERNEL = """\
__global__ void scaleRows(float *data, int rows, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll 1
    for (int c = 0; c < cols; ++c) data[i * cols + c] *= 2.0f;
}
"""

INCLUDING_MAIN = """\
#include <cuda_runtime.h>
#include "kernels/scale.cu"

int main()
{
    float *d;
    cudaMalloc(&d, 1024 * sizeof(float));
    return 0;
}
"""


def _included_project(tmp_path: Path) -> Path:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "scale.cu").write_text(INCLUDED_KERNEL)
    main = tmp_path / "main.cu"
    main.write_text(INCLUDING_MAIN)
    return main


def test_params_by_name_for_a_kernel_defined_in_an_included_cu(tmp_path: Path) -> None:
    main = _included_project(tmp_path)
    launch = infer_launch("scaleRows", main.read_text(), LaunchOverrides(params={"cols": 64}),
                          source_path=str(main))
    assert launch.param_names == ["data", "rows", "cols"]
    assert launch.params["cols"].value == 64 and launch.params["cols"].source == "cli"
    assert not [a for a in launch.assumptions if "cols" in a]
    # without the path the included file cannot be found: the names stay unknown, and the user is told so
    blind = infer_launch("scaleRows", main.read_text(), LaunchOverrides(params={"cols": 64}))
    assert blind.param_names == [] and any("are not known" in a for a in blind.assumptions)


def test_included_kernel_params_reach_the_analysis(tmp_path: Path, nvcc_available: object) -> None:
    main = _included_project(tmp_path)
    report = analyze_file(main, options=AnalysisOptions(overrides=LaunchOverrides(params={"cols": 64})))
    assert report.ok, [f.message for f in report.findings]
    k = report.kernel("scaleRows") or next(k for k in report.kernels if "scaleRows" in k.name)
    launch = k.launch.to_json()
    assert launch["params"] == {"cols": 64} and launch["source"]["params"] == {"cols": "cli"}
    assert not [a for a in launch["assumptions"] if "are not known" in a or "ignored" in a]
    assert [lp.trip_count for lp in k.loops] == [64]  # the loop bound `cols` is the named parameter
