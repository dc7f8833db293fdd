"""GPU profiles: the shipped files load and carry the thesis values, the loader rejects bad files with a message
that names the file and the field, and a written profile reads back unchanged."""

from __future__ import annotations

import dataclasses
import json
import math
import tomllib
from importlib import resources
from pathlib import Path

import pytest
from kerncast.analysis.gpus import (
    ExpModel,
    Linear,
    ModelError,
    PiecewiseLinear,
    ProfileError,
    dump_profile,
    list_profiles,
    load_profile,
    parse_profile,
)
from kerncast.analysis.gpus.tomlwriter import dumps
from kerncast.analysis.isa import RESOURCES, classify
from kerncast.analysis.ptx.model import Instruction
from kerncast.server.cli import main

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ["a100", "gtx1050", "h100", "h100pcie", "h200", "k20", "k4200", "l4", "l40s", "m60", "rtx2060", "rtx3070ti",
           "rtx3080", "rtx3090", "rtx4090", "t4", "v100"]
THESIS_GPUS = ["k20", "k4200", "m60", "gtx1050", "v100"]
MODERN_GPUS = ["t4", "a100", "l4", "rtx4090", "h100"]


def _raw(profile_id: str) -> dict:
    path = Path(load_profile(profile_id).path)
    return tomllib.loads(path.read_text(encoding="utf-8"))


def _write(tmp_path: Path, data: dict, name: str = "gpu.toml") -> Path:
    path = tmp_path / name
    path.write_text(dumps(data), encoding="utf-8")
    return path


def test_list_profiles_gives_every_shipped_id_sorted():
    assert list_profiles() == SHIPPED


@pytest.mark.parametrize("profile_id", SHIPPED)
def test_every_instruction_class_has_a_latency_and_a_unit(profile_id):
    """Each opcode of data/isa.toml, with float/int/f64 types and each state space, must be costable."""
    profile = load_profile(profile_id)
    text = resources.files("kerncast.analysis").joinpath("data/isa.toml").read_text(encoding="utf-8")
    table = tomllib.loads(text)["opcodes"]
    variants = [("f32",), ("s32",), ("f64",), ("global", "u32"), ("shared", "u32"), ("param", "u32")]
    for opcode in table:
        for mods in variants:
            cls = classify(Instruction(opcode, mods, (), None, 0, 0, None))
            assert profile.latency[cls.latency] > 0, (opcode, mods)
            assert cls.resource in profile.units
    for resource in RESOURCES:
        assert resource in profile.units


@pytest.mark.parametrize("profile_id", SHIPPED)
def test_every_estimated_value_says_where_it_came_from(profile_id):
    """A field marked estimated inside a measured section needs its own source, not the section's."""
    profile = load_profile(profile_id)
    for key, measured in profile.calibration.items():
        if "." in key and not measured:
            assert key in profile.sources, key
    for section in ("device", "latency", "global_latency", "power"):
        assert profile.source_of(section).strip()


def test_k20_carries_thesis_tables():
    k20 = load_profile("k20")
    assert k20.compute_capability == (3, 5)
    assert (k20.units["SP"], k20.units["LSU"]) == (192, 32)  # thesis section 4.4.4.2
    assert k20.latency["addf"] == 9 and k20.latency["divf"] == 894.5 and k20.latency["shared"] == 47
    assert k20.latency["global"] == 315  # thesis section 4.4.4.2, L(ld)
    assert k20.throughput["addf"]["tp"] == [122, 128, 167]
    assert k20.throughput["mov"]["ilp"] == [1]


def test_k20_global_latency_is_table_3_3():
    lat = load_profile("k20").global_latency
    assert lat(1000) == pytest.approx(0.02828 * 1000 + 220)
    assert lat(4096) == pytest.approx(0.004780 * 4096 + 251.7)  # a shared end uses the later piece
    assert lat(100_000) == pytest.approx(0.0001679 * 100_000 + 307.8)
    held = -0.00002529 * 2203648 + 501.8
    assert lat(10_000_000) == pytest.approx(held)  # beyond the fitted range: held, not extrapolated


def test_k20_models_are_table_4_5_and_section_3_4():
    k20 = load_profile("k20")
    assert k20.global_throughput(0) == pytest.approx(76363.8 * 0.04)
    assert k20.global_throughput(1e9) == pytest.approx(76363.8 * 1.04)
    assert k20.shared_throughput(1000) == pytest.approx(823761.8 * (1 - math.exp(-0.000013830 * 1000)))
    assert k20.launch_overhead(13 * 256) == pytest.approx(0.00002 * 13 * 256 + 1.4489)


@pytest.mark.parametrize(
    ("profile_id", "row", "value"),
    [("k4200", "divf", 1252), ("k4200", "cvt", 33), ("m60", "fma", 188), ("m60", "mov", 51),
     ("gtx1050", "mul", 86), ("gtx1050", "shared", 39), ("v100", "cvt", 218), ("v100", "fma", 232)],
)
def test_thesis_table_3_2_columns(profile_id, row, value):
    profile = load_profile(profile_id)
    assert profile.latency[row] == value
    assert profile.latency_basis == "ptx-thesis"
    assert profile.is_calibrated(f"latency.{row}")


def test_thesis_table_4_5_models_are_measured_and_others_estimated():
    assert load_profile("m60").global_throughput.a == 71453.6
    assert load_profile("gtx1050").shared_throughput.b == 1.12
    for pid in ["k20", "k4200", "m60", "gtx1050"]:
        assert load_profile(pid).is_calibrated("global_throughput")
    for pid in ["v100", *MODERN_GPUS]:
        assert not load_profile(pid).is_calibrated("global_throughput")


@pytest.mark.parametrize("profile_id", [p for p in SHIPPED if p != "k20"])
def test_only_the_k20_has_a_measured_latency_model_and_launch_overhead(profile_id):
    profile = load_profile(profile_id)
    assert not profile.is_calibrated("global_latency")
    assert not profile.is_calibrated("launch_overhead")
    summary = profile.calibration_summary()
    assert summary["global_latency"] is False and summary["launch_overhead"] is False
    assert profile.calibrated is False


@pytest.mark.parametrize("profile_id", [p for p in MODERN_GPUS if p != "h100"])
def test_modern_profiles_mark_inferred_latencies(profile_id):
    profile = load_profile(profile_id)
    assert profile.latency_basis == "sass-dependent"
    assert not profile.is_calibrated("latency.mma")
    assert profile.calibration_summary()["latency"] is False
    # the estimated global-latency curve starts at the unloaded DRAM latency and rises under load
    assert profile.global_latency(0) == profile.latency["global"]
    assert profile.global_latency(1_000_000) > profile.global_latency(0)


def test_calibration_summary_separates_measured_and_mixed_sections():
    k20 = load_profile("k20")
    summary = k20.calibration_summary()
    assert summary["global_latency"] is True and summary["limits"] is True
    assert summary["latency"] is False  # sfu, shfl, ... are estimates
    assert k20.is_calibrated("latency.addf") and not k20.is_calibrated("latency.sfu")
    measured, total = k20.calibration_counts()["latency"]
    assert total == len(k20.latency) and 0 < measured < total


@pytest.mark.parametrize("profile_id", SHIPPED)
def test_dump_round_trips_through_load(profile_id, tmp_path):
    profile = load_profile(profile_id)
    path = tmp_path / f"{profile_id}-copy.toml"
    path.write_text(dump_profile(profile), encoding="utf-8")
    again = load_profile(str(path))
    assert again == profile
    assert again.path == str(path.resolve())


@pytest.mark.parametrize("profile_id", SHIPPED)
def test_dump_writes_each_array_on_its_keys_line(profile_id):
    """Why the writer is Kerncast's own: a dumped profile reads like the hand-written one, arrays inline."""
    profile = load_profile(profile_id)
    text = dump_profile(profile)
    assert tomllib.loads(text) == profile.to_toml_dict()
    assert "= [\n" not in text and not any(line.strip() in ("[", "]", "],") for line in text.splitlines())
    assert f"compute_capability = {list(profile.compute_capability)}" in text


@pytest.mark.parametrize("gpu", ["h100", "h100pcie", "h200"])
def test_gh100_alu_latencies_are_the_h100s_measured_ones_and_memory_rows_stay_estimates(gpu):
    """The GH100 profiles carry the ALU latencies `kerncast calibrate` measured on an H100 (the H200 has the same
    SM), each marked measured; the memory rows, which the calibration did not replace, stay marked estimated."""
    profile = load_profile(gpu)
    measured = tomllib.loads((ROOT / "validation" / "h100" / "calibration.toml").read_text(encoding="utf-8"))
    for row in ("addf", "fma", "divf", "sqrt", "sfu", "logic", "divs"):
        assert profile.latency[row] == pytest.approx(measured["latency"][row], abs=0.05)
        assert profile.is_calibrated(f"latency.{row}")
    for row in ("global", "shared", "atom", "param"):
        assert not profile.is_calibrated(f"latency.{row}")


def test_a_calibrated_profile_written_by_code_reads_back(tmp_path):
    """What `kerncast calibrate` does: change measured values, mark them measured, write, load."""
    base = load_profile("l4")
    latency = {**base.latency, "addf": 4.5, "global": 612.0}
    calibration = {**base.calibration, "latency.addf": True, "latency.global": True}
    sources = {**base.sources, "latency.addf": "calibration run", "latency.global": "calibration run"}
    curve = PiecewiseLinear(((0.0, 1000.0, 0.5, 600.0), (1000.0, 5000.0, 0.1, 1000.0)), "threads", "cycles")
    mine = dataclasses.replace(
        base, id="l4-mine", latency=latency, calibration=calibration, sources=sources, global_latency=curve
    )
    path = tmp_path / "l4-mine.toml"
    path.write_text(dump_profile(mine), encoding="utf-8")
    loaded = load_profile(str(path))
    assert loaded == mine
    assert loaded.latency["addf"] == 4.5 and loaded.is_calibrated("latency.global")
    assert loaded.global_latency(2000) == pytest.approx(1200.0)


# ----------------------------------------------------------------------------------------------- bad input


def test_unknown_id_lists_the_known_ones():
    with pytest.raises(ProfileError, match="unknown GPU profile 'rtx9090'.*k20"):
        load_profile("rtx9090")


def test_missing_file_names_the_file(tmp_path):
    with pytest.raises(ProfileError, match="nothere.toml: cannot read"):
        load_profile(str(tmp_path / "nothere.toml"))


def test_broken_toml_names_the_file(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text('id = "x"\n[device\nsm_count = 3\n', encoding="utf-8")
    with pytest.raises(ProfileError, match=r"broken\.toml: invalid TOML"):
        load_profile(str(path))


def test_binary_file_is_rejected(tmp_path):
    path = tmp_path / "blob.toml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ProfileError, match="blob.toml: not a UTF-8"):
        load_profile(str(path))


def _broken(mutate) -> dict:
    data = _raw("v100")
    mutate(data)
    return data


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["latency"].pop("addf"), "field 'latency.addf': missing"),
        (lambda d: d["device"].__setitem__("sm_count", "80"), "field 'device.sm_count': must be an integer"),
        (lambda d: d["device"].__setitem__("sm_count", True), "field 'device.sm_count': must be an integer"),
        (lambda d: d["latency"].__setitem__("fma", -1.0), "field 'latency.fma': must be a finite number > 0"),
        (lambda d: d["units"].pop("LSU"), "field 'units.LSU': missing"),
        (lambda d: d["units"].__setitem__("SP", 0), "field 'units.SP': must be at least 1"),
        (lambda d: d.pop("power"), "field 'power': missing section"),
        (lambda d: d["power"].pop("source"), "field 'power.source': missing"),
        (lambda d: d["power"].__setitem__("calibrated", "yes"), "field 'power.calibrated': must be true or false"),
        (lambda d: d["power"].__setitem__("idle_w", 400.0), "field 'power.idle_w': idle power"),
        (lambda d: d["limits"].__setitem__("max_warps_per_sm", 48), "field 'limits.max_warps_per_sm'"),
        (lambda d: d["limits"].__setitem__("regs_per_smm", 1), "field 'limits.regs_per_smm': unknown field"),
        (lambda d: d["latency"].__setitem__("estimated", ["nope"]), "field 'latency.estimated': names 'nope'"),
        (lambda d: d.__setitem__("compute_capability", [7]), "field 'compute_capability'"),
        (lambda d: d.__setitem__("schema", 2), "field 'schema'"),
        (lambda d: d["tensor"].__setitem__("f17", 1024.0), "field 'tensor.f17': unknown row"),
        (lambda d: d["tensor"].__setitem__("f16", 0.0), "field 'tensor.f16': must be a finite number > 0"),
        (lambda d: d.__setitem__("id", "V100 SXM"), "field 'id'"),
        (lambda d: d["global_throughput"].pop("c"), "section 'global_throughput': missing field 'c'"),
        (lambda d: d["launch_overhead"].__setitem__("slope", "fast"), "section 'launch_overhead': field 'slope'"),
        (
            lambda d: d["global_latency"]["segments"][1].__setitem__(0, 5.0),
            r"section 'global_latency': field 'segments\[1\]': t_lo",
        ),
        (
            lambda d: d["global_latency"].__setitem__("segments", [[0, 1, 2]]),
            r"section 'global_latency': field 'segments\[0\]'",
        ),
    ],
)
def test_bad_profile_names_file_and_field(tmp_path, mutate, message):
    path = _write(tmp_path, _broken(mutate), "bad-v100.toml")
    with pytest.raises(ProfileError, match=message) as info:
        load_profile(str(path))
    assert "bad-v100.toml" in str(info.value)


def test_a_profile_written_before_the_tensor_table_loads_with_no_tensor_rates():
    data = _raw("v100")
    del data["tensor"]
    profile = parse_profile(data, "older-calibration")
    assert profile.tensor == {} and not profile.is_calibrated("tensor")
    assert parse_profile(tomllib.loads(dump_profile(profile)), "again").tensor == {}


@pytest.mark.parametrize("profile_id", list_profiles())
def test_tensor_rates_match_the_tensor_cores(profile_id):
    """A GPU with tensor cores (CC 7.0 on) states their FP16 rate; one without has no rate at all."""
    profile = load_profile(profile_id)
    assert bool(profile.tensor) == (profile.units["TENSOR"] > 0) == (profile.compute_capability >= (7, 0))
    if profile.tensor:
        # dense FP16 tensor FLOPs per SM per clock: 8 x 64 FMAs on Volta and Turing, 4 x 256 on Ampere ...
        assert profile.tensor["f16"] in (1024.0, 2048.0, 4096.0)


def test_parse_profile_names_the_given_origin():
    data = _raw("t4")
    del data["device"]["l2_bytes"]
    with pytest.raises(ProfileError, match="^calibrate-output: field 'device.l2_bytes': missing"):
        parse_profile(data, "calibrate-output")


# -------------------------------------------------------------------------------------- models and writer


def test_models_evaluate_and_validate():
    assert Linear(2.0, 1.0)(3.0) == 7.0
    assert ExpModel(10.0, 1.0, 1.0)(0.0) == 0.0
    assert PiecewiseLinear(((0.0, 10.0, 1.0, 0.0),))(-5.0) == -5.0  # below range: first piece
    with pytest.raises(ModelError, match="t_lo"):
        PiecewiseLinear(((0.0, 10.0, 1.0, 0.0), (11.0, 20.0, 1.0, 0.0)))
    with pytest.raises(ModelError, match="positive"):
        ExpModel.from_dict({"a": -1.0, "b": 1.0, "c": 1.0})
    for model in (Linear(0.5, 2.0, "t", "us"), ExpModel(1.0, 2.0, 3.0), PiecewiseLinear(((0.0, 1.0, 2.0, 3.0),))):
        assert type(model).from_dict(model.to_toml_dict()) == model


def test_toml_writer_escapes_text_and_keeps_types():
    data = {
        "s": 'a "quoted" \\ path\nline\ttab',
        "i": 3,
        "f": 1e-05,
        "b": False,
        "l": [[0, 1.5], [2, 3.0]],
        "odd key": 1,
        "t": {"x": 1, "sub": {"y": "z"}},
    }
    assert tomllib.loads(dumps(data)) == data
    with pytest.raises(ValueError, match="finite"):
        dumps({"x": float("nan")})


# ------------------------------------------------------------------------------------------------- CLI


def test_cli_gpus_lists_every_profile(capsys):
    assert main(["gpus"]) == 0
    out = capsys.readouterr().out
    for pid in SHIPPED:
        assert f"\n{pid} " in "\n" + out
    k20_line = next(line for line in out.splitlines() if line.startswith("k20 "))
    assert "3.5" in k20_line and "706 MHz" in k20_line and "latency 17/26" in k20_line


def test_cli_gpus_json(capsys):
    assert main(["gpus", "--format", "json", "k20", "h100"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == ["k20", "h100"]
    assert rows[0]["sections"]["global_latency"] == {"calibrated": True, "measured": 1, "values": 1}
    assert rows[1]["sections"]["latency"]["calibrated"] is False
    assert rows[1]["sm_count"] == 132


def test_cli_gpus_bad_profile_is_an_error_message(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text("nonsense = [", encoding="utf-8")
    assert main(["gpus", "k20", str(path)]) == 1
    captured = capsys.readouterr()
    assert "bad.toml: invalid TOML" in captured.err
    assert "Traceback" not in captured.err
    assert "k20" in captured.out
