"""`kerncast compare`: Nsight Compute reports read, matched to the source's kernels and set against predictions.

The two CSV files in tests/data/ncu follow the documented layouts of `ncu --csv --page raw` (one row per
launch, a units row) and `ncu --csv --page details` (one row per metric, display names such as "Duration")
with the metric names Nsight Compute uses; their numbers are made up in the right units and magnitudes for an
H100 (they test the reading, not a model), until a GPU has produced real reports.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from kerncast.analysis import gpus
from kerncast.analysis.calibration.compare import CONFIRMED, NOT_CONFIRMED, match_kernel, plain_name
from kerncast.analysis.calibration.ncu import NcuReportError, convert, parse_dim, read_csv_text, read_report
from kerncast.analysis.demangle import display_name
from kerncast.analysis.report import KernelReport
from kerncast.server import cli, cmd_compare

REPO = Path(__file__).resolve().parent.parent
RAW = REPO / "tests" / "data" / "ncu" / "strided_raw_page.csv"
DETAILS = REPO / "tests" / "data" / "ncu" / "reduction_details_page.csv"
STRIDED = REPO / "tests" / "kernels" / "strided.cu"
REDUCTION = REPO / "tests" / "kernels" / "reduction.cu"


def test_raw_page_is_read_with_units_and_thousands_separators():
    launches = read_report(RAW)
    assert [k.name for k in launches] == ["strideTwo(const float *, float *, int)",
                                          "strideParam(const float *, float *, int, int)",
                                          "strideTwoDouble(const double *, double *, int)"]
    first = launches[0]
    assert first.grid == (4096, 1, 1) and first.block == (256, 1, 1) and first.cc == "9.0"
    assert first.get("gpu__time_duration.sum") == pytest.approx(9.15)  # usecond -> us
    assert first.get("dram__bytes_read.sum") == pytest.approx(8.39e6)  # Mbyte -> bytes
    assert first.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum") == 262144  # "262,144"
    assert first.get("smsp__cycles_elapsed.avg.per_second") == pytest.approx(1.76e9)  # Ghz -> hz
    assert first.text["device__attribute_display_name"] == "NVIDIA H100 80GB HBM3"


def test_details_page_maps_display_names_to_metrics():
    launches = read_report(DETAILS)
    assert len(launches) == 3
    strided = launches[1]
    assert strided.get("gpu__time_duration.sum") == pytest.approx(21.47)  # "Duration"
    assert strided.get("sm__warps_active.avg.pct_of_peak_sustained_active") == pytest.approx(92.44)
    assert strided.get("launch__registers_per_thread") == 10
    assert strided.get("dram__bytes_write.sum") == pytest.approx(16380.0)  # Kbyte
    assert strided.get("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum") == 5505024


def test_units_and_names():
    assert convert(2.5, "msecond") == (2500.0, "us")
    assert convert(3.0, "Kibyte") == (3072.0, "byte")
    assert convert(7.0, "warp") == (7.0, "warp")
    assert parse_dim("(32, 8, 1)") == (32, 8, 1) and parse_dim("128") == (128, 1, 1)
    assert display_name("void MatrixMulCUDA<32>(float *, float *, float *, int, int)") == "MatrixMulCUDA<32>"
    assert display_name("ns::k(int)") == "ns::k"
    assert plain_name("void ns::tile<float, 4>(const float *)") == "tile"


def _kernel(name: str, mangled: str) -> KernelReport:
    return KernelReport(name=name, mangled=mangled, line=1)


def test_matching_by_mangled_name_then_name_then_without_template_arguments():
    kernels = [_kernel("MatrixMulCUDA<32>", "_Z13MatrixMulCUDAILi32EEvPfS0_S0_ii"), _kernel("scale", "_Z5scalePfi")]
    assert match_kernel("_Z5scalePfi", kernels)[1] == "mangled name"
    assert match_kernel("void MatrixMulCUDA<32>(float *, float *, float *, int, int)", kernels)[0] is kernels[0]
    found, how = match_kernel("void MatrixMulCUDA<16>(float *, float *, float *, int, int)", kernels)
    assert found is kernels[0] and how == "name without template arguments"
    assert match_kernel("other(int)", kernels) == (None, "")
    # a kernel in an anonymous namespace: the return type ends before "(anonymous namespace)", not inside it
    hidden = [_kernel("(anonymous namespace)::tile<4>", "_ZN12_GLOBAL__N_14tileILi4EEEvPf")]
    assert match_kernel("void (anonymous namespace)::tile<4>(float *)", hidden) == (hidden[0], "name")


def test_a_csv_without_the_header_is_refused_with_the_export_command(tmp_path):
    bad = tmp_path / "notes.csv"
    bad.write_text("kernel,time\nk,1.0\n")
    with pytest.raises(NcuReportError, match="ncu --csv --page raw"):
        read_report(bad)
    with pytest.raises(NcuReportError, match="header"):
        read_csv_text("")


def test_bad_report_files_give_one_line_and_status_2(tmp_path, capsys):
    binary = tmp_path / "report.csv"
    binary.write_bytes(b"\0\1\2binary")
    assert cli.main(["compare", str(binary), str(STRIDED)]) == 2
    assert "binary file" in capsys.readouterr().err
    assert cli.main(["compare", str(tmp_path / "missing.csv"), str(STRIDED)]) == 2
    assert "no such report file" in capsys.readouterr().err


def test_ncu_rep_without_nvidias_module_says_where_it_is(tmp_path, capsys):
    try:
        import ncu_report  # noqa: F401  # lazy import: probing whether NVIDIA's module is installed here
    except ImportError:
        pass
    else:
        pytest.skip("ncu_report is importable here, so the message for its absence cannot be shown")
    rep = tmp_path / "profile.ncu-rep"
    rep.write_bytes(b"NVIDIA report placeholder")
    assert cli.main(["compare", str(rep), str(STRIDED)]) == 2
    err = capsys.readouterr().err
    assert "ncu_report" in err and "extras/python" in err and "--csv --page raw" in err


@pytest.mark.nvcc
def test_compare_raw_page_confirms_the_uncoalesced_findings(nvcc_available, capsys):
    status = cli.main(["compare", str(RAW), str(STRIDED), "--gpu", "h100", "--param", "n=1048576",
                       "--param", "cols=8", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert status == 0
    by_kernel = {k["kernel"]: k for k in out["kernels"]}
    assert set(by_kernel) == {"strideTwo", "strideParam", "strideTwoDouble"}
    param = {q["name"]: q for q in by_kernel["strideParam"]["quantities"]}
    assert param["duration"]["measured"] == pytest.approx(21.6)
    assert param["duration"]["predicted"] > 0
    assert param["sectors per global load request"]["measured"] == pytest.approx(32.0)
    assert param["sectors per global load request"]["predicted"] == pytest.approx(32.0)
    assert param["registers per thread"]["measured"] == 10
    for kernel in by_kernel.values():
        assert [(f["code"], f["verdict"]) for f in kernel["findings"]] == [("uncoalesced-global", CONFIRMED)]
    # the double kernel's flagged line is a store: Nsight's store sectors (16 per request) confirm it
    double = by_kernel["strideTwoDouble"]["findings"][0]
    assert "global_op_st" in double["evidence"] and "16.00" in double["evidence"]


@pytest.mark.nvcc
def test_compare_details_page_text(nvcc_available, capsys):
    status = cli.main(["compare", str(DETAILS), str(REDUCTION), "--gpu", "h100"])
    out = capsys.readouterr().out
    assert status == 0
    assert "finding divergent-branch (line 14): confirmed by Nsight Compute" in out
    assert "finding shared-bank-conflict (line 33): confirmed by Nsight Compute" in out
    assert "[2] reduceSequential" in out and "no finding that an Nsight Compute metric can confirm" in out
    assert "duration" in out and "21.5 µs" in out


@pytest.mark.nvcc
def test_a_bank_conflict_nsight_does_not_see_is_not_confirmed(nvcc_available, tmp_path, capsys):
    text = DETAILS.read_text().replace('"5,505,024"', '"0"')
    report = tmp_path / "clean.csv"
    report.write_text(text)
    assert cli.main(["compare", str(report), str(REDUCTION), "--gpu", "h100", "--format", "json"]) == 0
    kernels = {k["kernel"]: k for k in json.loads(capsys.readouterr().out)["kernels"]}
    assert kernels["reduceStrided"]["findings"][0]["verdict"] == NOT_CONFIRMED


@pytest.mark.nvcc
def test_an_unmatched_kernel_is_named_and_fails(nvcc_available, tmp_path, capsys):
    report = tmp_path / "other.csv"
    report.write_text(RAW.read_text().replace("strideParam(const float *, float *, int, int)", "mystery(int)"))
    assert cli.main(["compare", str(report), str(STRIDED), "--gpu", "h100"]) == 1
    captured = capsys.readouterr()
    assert "no kernel of strided.cu matches mystery(int)" in captured.err
    assert "[1] mystery(int) (grid 4096x1x1, block 256x1x1): no kernel of the source has this name" in captured.out


def test_calibrate_writes_the_device_sections_from_the_report(tmp_path, capsys):
    out = tmp_path / "h100-ncu.toml"
    assert cli.main(["compare", str(RAW), "--calibrate", str(out), "--base", "h100", "--id", "h100-ncu"]) == 0
    assert "values from strided_raw_page.csv" in capsys.readouterr().out
    data = tomllib.loads(out.read_text())
    assert data["id"] == "h100-ncu" and data["name"] == "NVIDIA H100 80GB HBM3"
    profile = gpus.load_profile(out)
    assert profile.sm_count == 132
    assert profile.core_clock_mhz == pytest.approx(1760.0)  # the clock measured during the kernels
    assert profile.mem_bandwidth_gbs == pytest.approx(2 * 2619e6 * 5120 / 8 / 1e9, abs=0.1)
    assert profile.l2_bytes == 52428800
    assert profile.limits.shared_per_sm == 233472 and profile.limits.max_shared_per_block == 232448
    assert profile.is_calibrated("device.sm_count") and profile.is_calibrated("limits.regs_per_sm")
    assert "strided_raw_page.csv" in profile.source_of("device.core_clock_mhz")
    base = gpus.load_profile("h100")
    assert profile.latency == base.latency  # what a report cannot measure stays the base profile's
    assert profile.is_calibrated("latency") == base.is_calibrated("latency")


def test_calibrate_needs_device_attributes(tmp_path, capsys):
    assert cli.main(["compare", str(DETAILS), "--calibrate", str(tmp_path / "x.toml"), "--base", "h100"]) == 2
    assert "device__attribute_" in capsys.readouterr().err
    assert not (tmp_path / "x.toml").exists()


def test_compare_without_source_says_what_is_missing(capsys):
    assert cli.main(["compare", str(RAW)]) == 2
    assert "needs the CUDA source" in capsys.readouterr().err


def test_compare_takes_analyzes_compiler_flags(tmp_path):
    """The same toolchain flags as `analyze`, read the same way: an include folder named with a quote is a
    folder like any other, and --nvcc, --timeout and --compile-memory-mb reach the analysis."""
    folder = tmp_path / "Bob's proj"
    folder.mkdir()
    args = cli.build_parser("compare").parse_args(
        ["compare", str(RAW), str(STRIDED), "--gpu", "h100", "-I", str(folder), "--nvcc", "/opt/cuda/bin/nvcc",
         "--timeout", "30", "--compile-memory-mb", "2048", "--loops", "5"])
    options = cmd_compare._options(args)
    assert options.include_dirs == [str(folder)] and options.nvcc_path == "/opt/cuda/bin/nvcc"
    assert options.timeout_s == 30 and options.compile_memory_mb == 2048 and options.loops == 5
    assert options.gpu == "h100"
