"""Editor settings -> analysis options: every key, the shapes clients send, and bad values named in warnings."""

from __future__ import annotations

from kerncast.analysis.options import DEFAULT_MAX_FILE_BYTES
from kerncast.server.config import parse_settings, with_gpu


def test_defaults_from_nothing() -> None:
    for data in (None, {}, {"settings": {"kerncast": {}}}):
        settings, warnings = parse_settings(data)
        assert warnings == []
        o = settings.options
        # arch None: the target follows the project's compile_commands.json, else the GPU profile
        assert (o.gpu, o.arch, o.nvcc_path, o.include_dirs, o.defines, o.loops) == ("v100", None, None, [], [],
                                                                                    None)
        assert o.max_file_bytes == DEFAULT_MAX_FILE_BYTES and o.timeout_s == 120.0
        assert settings.analyze_on_change is True


def test_every_key_is_mapped() -> None:
    settings, warnings = parse_settings({"settings": {"kerncast": {
        "gpu": "a100", "arch": "sm_80", "nvccPath": "/opt/cuda/bin/nvcc", "includeDirs": ["inc"],
        "defines": ["N=4", "FAST"], "loops": 16, "analyzeOnChange": False, "timeoutSeconds": 30,
        "maxFileBytes": 1000,
        "thresholds": {"uncoalescedExcessPercent": 50, "bankConflictWays": 4, "energyHotspotShare": 0.5,
                       "lowOccupancy": 0.1},
        "launch": {"matmul": {"grid": [64, 64], "block": [16, 16], "dynamicSharedBytes": 1024,
                              "params": {"n": 1024}}},
    }}})
    assert warnings == []
    o = settings.options
    assert (o.gpu, o.arch, o.nvcc_path, o.include_dirs, o.defines) == ("a100", "sm_80", "/opt/cuda/bin/nvcc",
                                                                       ["inc"], ["N=4", "FAST"])
    assert (o.loops, o.timeout_s, o.max_file_bytes, settings.analyze_on_change) == (16, 30.0, 1000, False)
    t = o.thresholds
    assert (t.uncoalesced_excess_percent, t.bank_conflict_ways, t.energy_hotspot_share, t.low_occupancy) == (
        50.0, 4, 0.5, 0.1)
    launch = o.kernel_settings["matmul"]
    assert (launch.grid, launch.block, launch.smem, launch.loops, launch.params, launch.source) == (
        (64, 64, 1), (16, 16, 1), 1024, 16, {"n": 1024}, "setting")


def test_flat_dotted_keys_as_vscode_writes_them() -> None:
    settings, warnings = parse_settings({"kerncast": {"thresholds.lowOccupancy": 0.5, "gpu": "h100"}})
    assert warnings == [] and settings.options.thresholds.low_occupancy == 0.5 and settings.options.gpu == "h100"


def test_bad_values_are_named_and_replaced_by_defaults() -> None:
    settings, warnings = parse_settings({
        "gpu": "no-such-gpu", "arch": "pentium", "loops": -3, "includeDirs": "one/dir", "defines": [1, 2],
        "thresholds": {"lowOccupancy": 7, "bankConflictWays": 2.5},
        "launch": {"k": {"grid": [0], "block": "lots", "dynamicSharedBytes": -1, "params": {"n": "x"},
                         "stream": 2}, "j": 5},
        "timeoutSeconds": True, "surprise": 1,
    })
    text = "\n".join(warnings)
    for name in ("kerncast.gpu", "kerncast.arch", "kerncast.loops", "kerncast.defines",
                 "kerncast.thresholds.lowOccupancy", "kerncast.thresholds.bankConflictWays",
                 "kerncast.launch.k.grid", "kerncast.launch.k.block", "kerncast.launch.k.dynamicSharedBytes",
                 "kerncast.launch.k.params.n", "kerncast.launch.k", "kerncast.launch.j",
                 "kerncast.timeoutSeconds", "kerncast.surprise"):
        assert name in text, name
    o = settings.options
    assert (o.gpu, o.arch, o.loops, o.include_dirs, o.defines) == ("v100", None, None, ["one/dir"], [])
    assert o.thresholds.low_occupancy == 0.25 and o.thresholds.bank_conflict_ways == 2
    assert o.kernel_settings["k"].grid is None and o.kernel_settings["k"].params == {}
    assert "j" not in o.kernel_settings and o.timeout_s == 120.0


def test_not_an_object() -> None:
    settings, warnings = parse_settings(["gpu", "a100"])
    assert settings.options.gpu == "v100" and "must be an object" in warnings[0]


def test_with_gpu_keeps_the_rest() -> None:
    settings, _ = parse_settings({"arch": "sm_80", "launch": {"k": {"grid": 8, "block": 32}}})
    other = with_gpu(settings, "h100")
    assert other.options.gpu == "h100" and other.options.arch == "sm_80"
    assert other.options.kernel_settings["k"].grid == (8, 1, 1)
    assert other.fingerprint() != settings.fingerprint()
