"""compile_commands.json: found as clangd finds it, the file's entry (or the nearest) read through a whitelist."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from kerncast.analysis.compile_db import find_database, flags_for
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.server.config import parse_settings

PROJECT = Path(__file__).resolve().parent / "cmake_project"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    dest = tmp_path / "proj"
    shutil.copytree(PROJECT, dest)
    return dest


def test_found_in_build_beside_a_parent_directory(project: Path):
    assert find_database(project / "src" / "scale.cu") == project / "build" / "compile_commands.json"
    (project / "compile_commands.json").write_text("[]")
    assert find_database(project / "src" / "scale.cu") == project / "compile_commands.json"  # nearer first
    assert find_database(project / "src" / "scale.cu", project / "build") == project / "build" / "compile_commands.json"


def test_command_entry_gives_include_dir_define_std_and_arch(project: Path):
    flags = flags_for(project / "src" / "scale.cu")
    assert flags is not None and flags.exact
    assert flags.include_dirs == [str(project / "include")]  # relative to the relative `directory`
    assert flags.defines == ["KC_TILE=32", "NDEBUG"]
    assert flags.flags == ["-std=c++17"]
    assert flags.archs == ["compute_80", "sm_80"]


def test_arguments_entry_with_separate_values(project: Path):
    flags = flags_for(project / "src" / "shift.cu")
    assert flags is not None and flags.exact
    assert (flags.include_dirs, flags.defines, flags.flags) == ([str(project / "include")], ["KC_TILE=32"],
                                                                ["-std=c++17"])


def test_header_takes_the_nearest_entry(project: Path):
    flags = flags_for(project / "include" / "kc_config.h")
    assert flags is not None and not flags.exact and flags.defines[0] == "KC_TILE=32"


def test_only_whitelisted_checked_flags_are_kept(tmp_path: Path):
    entry = {"directory": str(tmp_path), "file": "k.cu", "arguments": [
        "nvcc", "-DOK=1", "-DBAD=$(rm -rf ~)", "-D", "ALSO_BAD=`id`", "-UGONE", "-Xcompiler", "-DHOST_ONLY",
        "--expt-relaxed-constexpr", "-std=c++17; rm", "-include", "evil.h", "-ccbin", "/tmp/evil", "-isystem",
        "sys", "-arch=sm_86", "--options-file", "opts.txt", "-o", "-DNOT_A_DEFINE", "k.cu"]}
    (tmp_path / "compile_commands.json").write_text(json.dumps([entry]))
    flags = flags_for(tmp_path / "k.cu")
    assert flags.defines == ["OK=1"] and flags.undefines == ["GONE"]
    assert flags.include_dirs == [str(tmp_path / "sys")]
    assert flags.flags == ["--expt-relaxed-constexpr"] and flags.archs == ["sm_86"]
    assert set(flags.dropped) == {"BAD=$(rm -rf ~)", "ALSO_BAD=`id`", "-std=c++17; rm"}


@pytest.mark.parametrize("content", ["not json", "{}", "[1, 2]", '[{"file": 3}]'])
def test_malformed_database_is_no_database(tmp_path: Path, content: str):
    (tmp_path / "compile_commands.json").write_text(content)
    assert flags_for(tmp_path / "k.cu") is None


def test_project_compiles_only_with_its_build_flags(nvcc_available, project: Path):
    with_db = analyze_file(project / "src" / "scale.cu", options=AnalysisOptions(gpu="a100"))
    assert with_db.ok, [f.message for f in with_db.findings]
    assert with_db.arch == "sm_80" and [k.name for k in with_db.kernels] == ["scale_strided"]
    assert any("compile_commands.json" in n for n in with_db.notes)
    assert any(f.code == "uncoalesced-global" for f in with_db.kernels[0].findings)
    without = analyze_file(project / "src" / "scale.cu", options=AnalysisOptions(gpu="a100", compile_commands=False))
    assert not without.ok and any("kc_config.h" in f.message for f in without.findings)


VERSIONED = """\
#include <cuda_runtime.h>
#include "kc_version.h"

__constant__ char version[] = PROJECT_VERSION;

__global__ void stamp(char *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = version[i % (sizeof(version) - 1)] + KC_OFFSET;
    }
}

int main()
{
    char *out;
    cudaMalloc(&out, 1024);
    stamp<<<4, 256>>>(out, 1024);
    return 0;
}
"""


def _cmake_project(root: Path, extra: str = "") -> Path:
    """A project as CMake exports it: a quoted define and an include directory, written in `command` with
    CMake's quoting (the folder's own name may hold an apostrophe and spaces)."""
    (root / "include").mkdir(parents=True)
    (root / "include" / "kc_version.h").write_text("#pragma once\n#define KC_OFFSET 1\n")
    (root / "src").mkdir()
    src = root / "src" / "stamp.cu"
    src.write_text(VERSIONED)
    command = (f'/usr/local/cuda/bin/nvcc -DPROJECT_VERSION=\\"1.2.0\\" -I"{root / "include"}" {extra}'
               f'-std=c++17 -arch=sm_80 -o CMakeFiles/stamp.dir/src/stamp.cu.o -c "{src}"')
    (root / "build").mkdir()
    (root / "build" / "compile_commands.json").write_text(json.dumps(
        [{"directory": str(root / "build"), "command": command, "file": str(src)}]))
    return src


def test_a_quoted_cmake_define_is_kept_as_cmake_wrote_it(tmp_path: Path):
    src = _cmake_project(tmp_path / "proj")
    flags = flags_for(src)
    assert flags is not None and flags.defines == ['PROJECT_VERSION="1.2.0"'] and not flags.dropped


@pytest.mark.parametrize("folder", ["Bob's proj", "Bob's proj ünïcode"])
def test_a_project_in_a_folder_named_with_an_apostrophe_analyses_with_its_quoted_define(nvcc_available,
                                                                                        tmp_path: Path, folder: str):
    src = _cmake_project(tmp_path / folder)
    report = analyze_file(src, options=AnalysisOptions(gpu="a100", lime=False))
    assert report.ok, [f.message for f in report.findings]
    assert [k.name for k in report.kernels] == ["stamp"]
    assert not any("ignored build flag" in n for n in report.notes), report.notes
    assert report.kernels[0].line == 6


def test_a_build_value_that_cannot_be_passed_is_dropped_with_a_note_and_the_file_analyses(nvcc_available,
                                                                                          tmp_path: Path):
    src = _cmake_project(tmp_path / "proj", extra="-DGIT_DESC=$(git\\ describe) ")
    report = analyze_file(src, options=AnalysisOptions(gpu="a100", lime=False))
    assert report.ok, [f.message for f in report.findings]
    assert any(n.startswith("ignored build flag values that failed the checks: GIT_DESC=$(git describe)")
               for n in report.notes), report.notes


@pytest.mark.parametrize("how", ["setting", "cli"])
def test_include_dirs_inside_a_workspace_named_bob_s_proj(nvcc_available, tmp_path: Path, how: str):
    workspace = tmp_path / "Bob's proj"
    src = _cmake_project(workspace)
    (workspace / "build" / "compile_commands.json").unlink()
    include = str(workspace / "include")
    if how == "setting":
        settings, warnings = parse_settings({"includeDirs": [include], "defines": ['PROJECT_VERSION="1.2.0"']})
        assert not warnings, warnings
        report = analyze_file(src, options=replace(settings.options, gpu="a100"))
        assert report.ok, [f.message for f in report.findings]
        assert [k.name for k in report.kernels] == ["stamp"]
    else:
        proc = subprocess.run([sys.executable, "-m", "kerncast.server", "analyze", str(src), "--gpu", "a100", "-I",
                               include, "-D", 'PROJECT_VERSION="1.2.0"'], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert "kernel stamp" in proc.stdout
