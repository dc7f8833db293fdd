"""Launch sizes computed through floats fold with C's rules: float rounds to single precision at every step,
an integer operand converts to the floating type, a conversion back truncates toward zero, and what C leaves
undefined stays unknown."""

from __future__ import annotations

import pytest
from kerncast.analysis.cexpr import ConstEnv
from kerncast.analysis.launch import find_launch_sites, infer_launch

ENV = ConstEnv("#define N 1000\n#define SCALE 0.5f\nconst int blocks = ceil(N / 256.0);\n")


def fold(expr: str):
    return ENV.fold(expr, len(ENV.source))


@pytest.mark.parametrize(("expr", "value"), [
    ("ceil(N / (float)256)", 4),            # the grid-size idiom
    ("(int)ceil((float)N / (2.f * 128))", 4),
    ("(int)(static_cast<float>(N) / 3)", 333),  # a conversion to an integer truncates
    ("blocks", 4),                          # an int variable initialised from a double
    ("N * SCALE", 500),
    ("(int)-2.7", -2),                      # toward zero, not down
    ("(int)16777217.0f", 16777216),         # 2^24 + 1 is not a float
    ("(int)16777217.0", 16777217),          # but it is a double
    ("(unsigned)(16777216.0f + 1.0f)", 16777216),  # float + float stays float
    ("1.5f > 1", 1),
    ("max(1, (int)ceil(N / 3.0f))", 334),
])
def test_floating_expressions_fold_as_c_computes_them(expr, value):
    assert fold(expr).value == value


@pytest.mark.parametrize(("expr", "why"), [
    ("N % 2.0", "operator % on a floating-point value"),
    ("(unsigned)-1.0", "does not fit the integer type"),
    ("1e40f", "does not fit a 32-bit float"),
    ("N / 0.0", "division by zero"),
    ("max(1.5f, 2)", "floating-point value used where C needs an integer"),
    ("1.0L", "long double"),
])
def test_what_c_leaves_undefined_or_kerncast_does_not_model_stays_unknown(expr, why):
    folded = fold(expr)
    assert folded.value is None and why in folded.reason


def test_a_launch_written_with_ceil_and_float_casts_is_known():
    source = ("#define N_LINES 256\n#define BLOCK_DIM 64\n__global__ void k(int n) {}\n"
              "int main() {\n  dim3 block(256);\n  dim3 grid((unsigned int)ceil(1000 / (float)block.x));\n"
              "  k<<<grid, block>>>(1);\n"
              "  k<<<(unsigned int)ceil((float)N_LINES / (float)BLOCK_DIM), BLOCK_DIM>>>(2);\n}\n")
    first, second = find_launch_sites(source)
    assert first.grid.value == (4, 1, 1)
    assert second.grid.value == (4, 1, 1) and second.block.value == (64, 1, 1)


def test_a_floating_kernel_argument_is_not_taken_for_an_integer_parameter_value():
    """`saxpy<<<...>>>(n, 2.0f, x, y)`: the float argument is no integer, so no parameter gets the value 2."""
    source = ("__global__ void saxpy(int n, float a, float *y) {}\n"
              "int main() { float *y; const int n = 1024; saxpy<<<n / 256, 256>>>(n, 2.5f, y); }\n")
    (site,) = find_launch_sites(source)
    assert site.arg_values[0].as_int() == 1024
    assert site.arg_values[1].value == 2.5 and site.arg_values[1].as_int() is None
    assert infer_launch("saxpy", source).params.keys() == {"n"}
