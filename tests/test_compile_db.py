"""compile_commands.json: found as clangd finds it, the file's entry (or the nearest) read through a whitelist."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from kerncast.analysis.compile_db import find_database, flags_for
from kerncast.analysis.pipeline import AnalysisOptions, analyze_file

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
