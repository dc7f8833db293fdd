"""The documented Neovim setup (`tests/nvim/kerncast.lua`, shown in docs/neovim.md) in the real, headless `nvim`.

Neovim edits a copy of `examples/transpose.cu` (also at a path with a space and non-ASCII characters), saves
it, and the test asserts what Neovim itself received and
shows: the diagnostics' codes and lines, the first line of the hover window on a kernel's name, and the code
lens titles.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from source_lines import line_of

HERE = Path(__file__).resolve().parent
NVIM_DIR = HERE / "nvim"
EXAMPLES = HERE.parent / "examples"


@pytest.fixture(scope="module")
def nvim() -> str:
    path = shutil.which("nvim")
    if path is None:
        pytest.skip("nvim not found (Debian package `neovim`; .ci/run installs it)")
    return path


def _server_env(env: dict[str, str]) -> dict[str, str]:
    """Serve with this interpreter's `kerncast` (the documented default command) when it is installed."""
    bindir = Path(sys.executable).parent
    if (bindir / "kerncast").exists():
        env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    else:
        env["KERNCAST_CMD"] = json.dumps([sys.executable, "-m", "kerncast.server", "lsp"])
    return env


def _drive(nvim: str, tmp_path: Path, driver: str, file: Path, **env: str) -> dict:
    """Run the driver `tests/nvim/<driver>` in headless Neovim with the documented setup on `file` (the
    `KERNCAST_NVIM_*` variables in `env` tell it what to do) and return what it wrote, after checking that it
    wrote something and that every step succeeded."""
    out = tmp_path / "result.json"
    variables = {f"KERNCAST_NVIM_{name}": value for name, value in env.items()}
    env = _server_env(dict(os.environ, KERNCAST_NVIM_OUT=str(out), KERNCAST_NVIM_FILE=str(file), **variables,
                           HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path)))
    proc = subprocess.run([nvim, "--headless", "-n", "-i", "NONE", "-u", str(NVIM_DIR / "init.lua"),
                           "-c", f"luafile {NVIM_DIR / driver}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.exists(), f"nvim wrote no result (rc {proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    result = json.loads(out.read_text())
    assert result["ok"], f"{result.get('error')} after steps {result.get('steps')}"
    return result


@pytest.mark.nvcc
@pytest.mark.parametrize("relative", ["transpose.cu", "dir with space/kérnel ü.cu"], ids=["plain", "space-non-ascii"])
def test_neovim_session(nvim: str, nvcc_available: object, tmp_path: Path, relative: str) -> None:
    """Also for a path with a space and non-ASCII characters, which Neovim percent-encodes in the URI."""
    src = tmp_path / relative
    src.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLES / "transpose.cu", src)
    result = _drive(nvim, tmp_path, "e2e.lua", src, KERNEL="transposeNaive")
    print(f"nvim {result['version']['major']}.{result['version']['minor']}.{result['version']['patch']}")
    assert result["filetype"] == "cuda"
    if " " in relative:
        assert "%20" in result["uri"] and "%C3%A9" in result["uri"].upper(), result["uri"]

    diags = {(d["code"], d["line"]) for d in result["diagnostics"]}
    assert ("uncoalesced-global", line_of(src, "odata[x * height + (y + j)]")) in diags  # transposeNaive's store
    assert ("shared-bank-conflict", line_of(src, "= tile[threadIdx.x][threadIdx.y + j]")) in diags  # Tiled's read
    assert all(d["source"] == "kerncast" for d in result["diagnostics"])

    first = next(line for line in result["hover"] if line.strip())
    assert re.match(r"^(### )?transposeNaive — on V100\b", first), first

    lenses = sorted((c["line"], c["title"]) for c in result["codelens"])
    kernels = ("transposeNaive", "transposeTiled", "transposePadded")
    assert [line for line, _ in lenses] == [line_of(src, f"__global__ void {k}(") for k in kernels]
    for _, title in lenses:
        assert re.match(r"^(≈ \S+ (ns|µs|ms|s) \(\S+ (ns|µs|ms|s)–\S+ (ns|µs|ms|s)\)|time not available) · ",
                        title), title
        assert " on V100" in title and "@ <<<64x64, 32x8>>>" in title


DECL = "    __shared__ float tile[TILE_DIM][TILE_DIM];"
EMOJI_DECL = "    /* 😀 */ __shared__ float tile[TILE_DIM][TILE_DIM];"
TYPED = 15


@pytest.mark.nvcc
def test_neovim_unsaved_lines_above_a_flagged_kernel(nvim: str, nvcc_available: object, tmp_path: Path) -> None:
    """Lines typed above the kernels and not saved: Neovim 0.7 takes no versioned edits, so the server must carry
    its analysis into the buffer's text itself. The pad fix asked at the finding's old line applies nothing or
    exactly the right edit, asked at its new line it is offered and writes exactly `TILE_DIM + 1` on the
    declaration that has an emoji before it; the hover and the lenses follow the kernels."""
    src = tmp_path / "transpose.cu"
    text = (EXAMPLES / "transpose.cu").read_text()
    assert text.count(DECL) == 1  # transposeTiled's tile, which its column read conflicts on
    src.write_text(text.replace(DECL, EMOJI_DECL, 1))
    stale = line_of(src, "= tile[threadIdx.x][threadIdx.y + j]")  # transposeTiled's column read
    decl = line_of(src, EMOJI_DECL.strip())
    result = _drive(nvim, tmp_path, "stale.lua", src, TYPED=str(TYPED), STALE_LINE=str(stale))
    assert result["offset_encoding"] == "utf-16"
    assert ("shared-bank-conflict", stale) in {(d["code"], d["line"]) for d in result["diagnostics"]}

    analysed = result["analysed"]
    typed = result["typed_text"]
    at = result["typed_at"]
    assert typed[:at - 1] == analysed[:at - 1] and typed[at - 1 + TYPED:] == analysed[at - 1:]
    expected = list(typed)
    expected[decl - 1 + TYPED] = "    /* 😀 */ __shared__ float tile[TILE_DIM][TILE_DIM + 1];"

    # at the stale line: nothing, or exactly the right edit
    print("offered at the stale line:", result["stale_titles"], "picked:", result["stale_picked"])
    assert result["stale_after"] in (typed, expected)
    assert (result["stale_after"] == expected) == bool(result["stale_picked"])
    # at the new line: the fix is offered and gives exactly the expected text
    assert any("pad the last dimension" in t for t in result["new_titles"]), result["new_titles"]
    assert result["new_picked"], result["new_titles"]
    assert result["new_after"] == expected

    first = next(line for line in result["hover"] if line.strip())
    assert re.match(r"^(### )?transposeNaive — on V100\b", first), first
    shifted = src.parent / "typed.cu"
    shifted.write_text("\n".join(typed) + "\n")
    kernels = ("transposeNaive", "transposeTiled", "transposePadded")
    assert sorted(c["line"] for c in result["codelens"]) == [line_of(shifted, f"__global__ void {k}(")
                                                             for k in kernels]


@pytest.mark.nvcc
def test_neovim_change_since_the_last_save(nvim: str, nvcc_available: object, tmp_path: Path) -> None:
    """A copy of `examples/matmul.cu` saved, then saved with the naive kernel's inner loop cut to a quarter of
    its trips: Neovim's lens and hover of that kernel say it got faster than the last save, the tiled
    kernel's lens says nothing of a change."""
    src = tmp_path / "matmul.cu"
    shutil.copy(EXAMPLES / "matmul.cu", src)
    result = _drive(nvim, tmp_path, "last_save.lua", src, OLD_LOOP="k < n; ++k", NEW_LOOP="k < n / 4; ++k")
    assert len(result["first_lenses"]) == 2
    assert not any("last save" in (lens["title"] or "") for lens in result["first_lenses"]), result["first_lenses"]

    by_line = {lens["line"]: lens["title"] for lens in result["codelens"]}
    naive = by_line[line_of(src, "void matmulNaive(")]
    tiled = by_line[line_of(src, "void MatrixMulCUDA(")]
    assert re.search(r"\d+(\.\d+)?x faster than the last save", naive), naive
    assert "last save" not in tiled, tiled
    assert any(re.search(r"faster than the last save", line) for line in result["hover"]), result["hover"]


#: the rewriting quick fixes the editor test applies: (file, kernel, the finding's code, words of the fix's title)
REWRITES = [
    (EXAMPLES / "matmul.cu", "matmulNaive", "shared-tiling", "as a tiled matrix multiply"),
    (EXAMPLES / "stencil.cu", "stencil1d", "shared-tiling", "as a tiled stencil"),
    (HERE / "kernels" / "transpose_indexed.cu", "transposeNaive", "uncoalesced-global", "as a tiled transpose"),
]
_LENS_TIME = re.compile(r"^≈ (\d+(?:\.\d+)?) (ns|µs|ms|s) ")
_SECONDS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def _lens_seconds(title: str | None) -> float:
    m = _LENS_TIME.match(title or "")
    assert m, f"no predicted time in the lens {title!r}"
    return float(m.group(1)) * _SECONDS[m.group(2)]


@pytest.mark.nvcc
def test_neovim_applies_the_tiling_rewrites(nvim: str, nvcc_available: object, tmp_path: Path) -> None:
    """In one Neovim session: the naive matrix multiply and the stencil get the `shared-tiling` rewrite, NVIDIA's
    indexed naive transpose the tiled transpose; each is offered at its finding, applied through Neovim's
    code-action menu and saved. After the save's analysis the finding is gone, no other finding and no nvcc
    message appeared, the saved file is the tiled kernel, and the kernel's lens shows a lower predicted time."""
    cases = []
    for src, kernel, code, title in REWRITES:
        copy = tmp_path / src.name
        shutil.copy(src, copy)
        cases.append({"file": str(copy), "kernel": kernel, "code": code, "title": title})
    result = _drive(nvim, tmp_path, "fixes.lua", tmp_path, CASES=json.dumps(cases))
    assert len(result["cases"]) == len(REWRITES)
    for case, (src, kernel, code, _) in zip(result["cases"], REWRITES, strict=True):
        before = Counter(d["code"] for d in case["before"])
        after = Counter(d["code"] for d in case["after"])
        was, now = _lens_seconds(case["lens_before"]), _lens_seconds(case["lens_after"])
        print(f"{src.name}: {case['picked']!r}; {kernel} {was * 1e6:.1f} µs -> {now * 1e6:.1f} µs; "
              f"findings {dict(before)} -> {dict(after)}")
        assert before[code] == 1 and after[code] == 0, (src.name, case["after"])
        assert not any(c.startswith("compile-") for c in after), (src.name, case["after"])
        assert after - before == Counter(), (src.name, "new findings", after - before)
        saved = Path(case["file"]).read_text()
        assert not case["modified"] and saved != src.read_text()
        assert "__shared__" in saved and "__syncthreads();" in saved
        assert now < was, (src.name, case["lens_before"], case["lens_after"])
