"""Editor settings (camelCase, as clients send them) -> `AnalysisOptions` and the server's own switches.

Settings arrive as `initializationOptions` and in `workspace/didChangeConfiguration` (`{settings: {kerncast:
{...}}}`). A bad value never stops the server: it is reported (the message names the setting) and its default
is used instead.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kerncast.analysis.compile_db import find_database
from kerncast.analysis.gpus import list_profiles
from kerncast.analysis.launch import LaunchOverrides, parse_dim
from kerncast.analysis.options import DEFAULT_MAX_FILE_BYTES, POWER_MODELS, AnalysisOptions, Thresholds
from kerncast.analysis.source_model import MAX_COUNT
from kerncast.analysis.targets import default_gpu
from kerncast.analysis.timing.estimate import TIME_MODELS
from kerncast.analysis.toolchain import (
    MAX_TIMEOUT_S,
    MIN_COMPILE_MEMORY_MB,
    check_define,
    check_include_dir,
    check_path,
    shown,
)

#: a GPU profile file given as a path is at most this large (shipped ones are a few KB)
MAX_PROFILE_BYTES = 1 << 20

_OPTIONS = AnalysisOptions()

#: Every setting's default, taken from the library's own defaults so that the editor and the CLI agree.
DEFAULTS: dict[str, Any] = {
    "gpu": default_gpu(_OPTIONS.gpu),  # this machine's GPU when NVML finds one with a profile
    "arch": _OPTIONS.arch,
    "nvccPath": None,
    "includeDirs": [],
    "defines": [],
    "compileCommands": True,
    "compileCommandsDir": None,
    "preferSystemToolkit": False,
    "launch": {},
    "loops": None,
    "timeModel": _OPTIONS.time_model,
    "powerModel": _OPTIONS.power_model,
    "thresholds": {setting.name: setting.default for _, setting in Thresholds.settings()},
    "analyzeOnChange": True,
    "timeoutSeconds": _OPTIONS.timeout_s,
    "maxFileBytes": DEFAULT_MAX_FILE_BYTES,
    "compileMemoryMB": _OPTIONS.compile_memory_mb,  # None: min(4096, half the machine's memory)
}

#: keys of the client's own (the VS Code extension's server command, trace level and per-line cost decoration),
#: not the server's
CLIENT_ONLY = frozenset({"server", "trace", "lineCosts"})

#: Settings whose value reaches a command line (nvcc's or the server's own) or names a file that is read.
#: A cloned repository must not be able to set them: the VS Code manifest restricts each one in untrusted
#: workspaces (`capabilities.untrustedWorkspaces.restrictedConfigurations`, checked by a test).
COMMAND_LINE_SETTINGS = frozenset({"nvccPath", "includeDirs", "defines", "arch", "gpu", "server.command",
                                   "compileCommands", "compileCommandsDir", "preferSystemToolkit"})
#: Settings that name a program to run: machine-overridable scope, like vscode-clangd's `clangd.path`.
EXECUTABLE_SETTINGS = frozenset({"nvccPath", "server.command"})
#: Settings that are numbers, switches or launch data and reach no command line.
DATA_SETTINGS = frozenset({"launch", "loops", "timeModel", "powerModel", "thresholds", "analyzeOnChange",
                           "timeoutSeconds", "maxFileBytes", "compileMemoryMB", "trace.server",
                           "lineCosts.enabled"})


@dataclass(frozen=True)
class Settings:
    """What the server was told, typed: the analysis options plus when to analyse. Parsed once from the
    client's JSON (`parse_settings`); a change of one value is a `replace` (`with_gpu`), not a new parse."""

    options: AnalysisOptions = field(default_factory=AnalysisOptions)
    analyze_on_change: bool = True

    def fingerprint(self) -> str:
        """A key that changes whenever a setting that affects the analysis changes (for the result cache): the
        options' own form, every field of which is a setting's value."""
        return repr(self.options)


def unwrap(data: Any) -> Any:
    """`{settings: {kerncast: {...}}}`, `{kerncast: {...}}` or the settings themselves -> the settings."""
    if isinstance(data, dict):
        if isinstance(data.get("settings"), dict):
            data = data["settings"]
        if isinstance(data.get("kerncast"), dict):
            data = data["kerncast"]
    return data


def _dotted(data: dict[str, Any]) -> dict[str, Any]:
    """Accept `thresholds.lowOccupancy` style keys too (as flat VS Code settings write them)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(key, str) and "." in key:
            head, _, tail = key.partition(".")
            sub = out.setdefault(head, {})
            if isinstance(sub, dict):
                sub[tail] = value
        elif key in out and isinstance(out[key], dict) and isinstance(value, dict):
            out[key].update(value)
        else:
            out[key] = value
    return out


class _Reader:
    def __init__(self, data: dict[str, Any], warnings: list[str]) -> None:
        self.data = data
        self.warnings = warnings

    def bad(self, name: str, value: Any, why: str, default: Any) -> Any:
        self.warnings.append(f"Kerncast: setting kerncast.{name} = {shown(value)} ignored ({why}); "
                             f"using {shown(default)}")
        return default

    def string(self, name: str, pattern_ok: Any = None, why: str = "not a valid value") -> str:
        value, default = self.data.get(name), DEFAULTS[name]
        if value is None:
            return default
        if not isinstance(value, str) or not value.strip():
            return self.bad(name, value, "expected a non-empty string", default)
        if pattern_ok is not None and not pattern_ok(value.strip()):
            return self.bad(name, value, why, default)
        return value.strip()

    def optional_path(self, name: str) -> str | None:
        value = self.data.get(name)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            return self.bad(name, value, "expected a path", None)
        try:
            return check_path(value, "path")
        except ValueError as exc:
            return self.bad(name, value, str(exc), None)

    def checked_strings(self, name: str, check: Any) -> list[str]:
        """A list of strings where each entry passes `check` (ValueError: the entry is reported and dropped)."""
        kept = []
        for entry in self.strings(name):
            try:
                kept.append(check(entry))
            except ValueError as exc:
                self.warnings.append(f"Kerncast: setting kerncast.{name}: {exc}; the entry is ignored")
        return kept

    def strings(self, name: str) -> list[str]:
        value = self.data.get(name)
        if value is None:
            return []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return self.bad(name, value, "expected a list of strings", [])
        return [v for v in value if v.strip()]

    def number(self, name: str, value: Any, default: Any, low: float, high: float = math.inf,
               integer: bool = False) -> Any:
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            return self.bad(name, value, "expected a number", default)
        if integer and int(value) != value:
            return self.bad(name, value, "expected an integer", default)
        if not low <= value <= high:
            bounds = f"at least {low}" if high == math.inf else f"between {low} and {high}"
            return self.bad(name, value, f"must be {bounds}", default)
        return int(value) if integer else float(value)

    def boolean(self, name: str) -> bool:
        value, default = self.data.get(name), DEFAULTS[name]
        if value is None:
            return default
        if not isinstance(value, bool):
            return self.bad(name, value, "expected true or false", default)
        return value


def _dim(value: Any) -> tuple[int, int, int]:
    if isinstance(value, bool):
        raise ValueError("expected a number or [x, y, z]")
    if isinstance(value, int):
        return parse_dim(str(value))
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return parse_dim(",".join(str(v) for v in value))
    if isinstance(value, str):
        return parse_dim(value)
    raise ValueError("expected a number or [x, y, z]")


def _kernel_launch(name: str, spec: Any, loops: int | None, reader: _Reader) -> LaunchOverrides | None:
    where = f"launch.{name}"
    if not isinstance(spec, dict):
        reader.bad(where, spec, "expected an object with grid, block, dynamicSharedBytes, params", None)
        return None
    out = LaunchOverrides(loops=loops, source="setting")
    for key in ("grid", "block"):
        if spec.get(key) is not None:
            try:
                setattr(out, key, _dim(spec[key]))
            except ValueError as exc:
                reader.bad(f"{where}.{key}", spec[key], str(exc), None)
    out.smem = reader.number(f"{where}.dynamicSharedBytes", spec.get("dynamicSharedBytes"), None, 0, MAX_COUNT,
                             integer=True)
    params = spec.get("params") or {}
    if not isinstance(params, dict):
        reader.bad(f"{where}.params", params, "expected an object NAME -> integer", {})
        params = {}
    for pname, pvalue in params.items():
        v = reader.number(f"{where}.params.{pname}", pvalue, None, -math.inf, integer=True)
        if v is not None:
            out.params[str(pname)] = v
    unknown = sorted(set(spec) - {"grid", "block", "dynamicSharedBytes", "params"})
    if unknown:
        reader.warnings.append(f"Kerncast: setting kerncast.{where}: unknown keys {', '.join(unknown)} ignored")
    return out


def _valid_time_model(text: str) -> bool:
    return text in TIME_MODELS


def _valid_power_model(text: str) -> bool:
    return text in POWER_MODELS


def _valid_arch(text: str) -> bool:
    """`sm_NN` or `compute_NN`, with an optional lower-case letter (`sm_90a`)."""
    kind, sep, number = text.partition("_")
    if kind not in ("sm", "compute") or not sep:
        return False
    if number[-1:] in tuple("abcdefghijklmnopqrstuvwxyz"):
        number = number[:-1]
    return number.isascii() and number.isdigit()


def _known_gpu(text: str) -> bool:
    """A shipped profile id, or the path of one existing, small, regular `.toml` file (no patterns)."""
    try:
        if text in list_profiles():
            return True
    except Exception:  # noqa: BLE001 - a broken profile directory must not stop settings parsing
        pass
    if not text.endswith(".toml") or set(text) & set("*?[]{}\0\n"):
        return False
    path = Path(text).expanduser()
    try:
        return path.is_absolute() and path.is_file() and path.stat().st_size <= MAX_PROFILE_BYTES
    except (OSError, ValueError):
        return False


def parse_settings(data: Any) -> tuple[Settings, list[str]]:
    """Settings from a client's JSON (any of the shapes `unwrap` accepts), and a warning per bad value."""
    warnings: list[str] = []
    data = unwrap(data)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        warnings.append(f"Kerncast: settings must be an object, got {type(data).__name__}; using the defaults")
        data = {}
    data = _dotted(data)
    r = _Reader(data, warnings)
    known = set(DEFAULTS)
    unknown = sorted(k for k in data if k not in known and k not in CLIENT_ONLY)
    if unknown:
        names = ", ".join("kerncast." + (k if len(k) <= 60 else k[:60] + "…") for k in unknown[:10])
        more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
        warnings.append(f"Kerncast: unknown settings ignored: {names}{more}")

    gpu = r.string("gpu", _known_gpu, "no such GPU profile (see `kerncast gpus`), nor the absolute path of a "
                   "profile .toml file")
    arch = r.string("arch", _valid_arch)
    loops = r.number("loops", data.get("loops"), None, 1, MAX_COUNT, integer=True)
    time_model = r.string("timeModel", _valid_time_model)
    power_model = r.string("powerModel", _valid_power_model)

    th = data.get("thresholds") or {}
    if not isinstance(th, dict):
        th = r.bad("thresholds", th, "expected an object", {})
    d = DEFAULTS["thresholds"]
    thresholds = Thresholds(**{
        name: r.number(f"thresholds.{s.name}", th.get(s.name), d[s.name], s.low, s.high, integer=s.integer)
        for name, s in Thresholds.settings()})

    kernels: dict[str, Any] = {}
    launch = data.get("launch") or {}
    if not isinstance(launch, dict):
        launch = r.bad("launch", launch, "expected an object kernel name -> launch", {})
    for name, spec in launch.items():
        ov = _kernel_launch(str(name), spec, loops, r)
        if ov is not None:
            kernels[str(name)] = ov

    options = AnalysisOptions(
        gpu=gpu, arch=arch,
        include_dirs=r.checked_strings("includeDirs", check_include_dir),
        defines=r.checked_strings("defines", check_define),
        compile_commands=r.boolean("compileCommands"), compile_commands_dir=r.optional_path("compileCommandsDir"),
        prefer_system_toolkit=r.boolean("preferSystemToolkit"),
        nvcc_path=r.optional_path("nvccPath"),
        timeout_s=r.number("timeoutSeconds", data.get("timeoutSeconds"), DEFAULTS["timeoutSeconds"], 1,
                           MAX_TIMEOUT_S),
        compile_memory_mb=r.number("compileMemoryMB", data.get("compileMemoryMB"), None, MIN_COMPILE_MEMORY_MB,
                                   integer=True),
        max_file_bytes=r.number("maxFileBytes", data.get("maxFileBytes"), DEFAULTS["maxFileBytes"], 1,
                                integer=True),
        kernel_settings=kernels, loops=loops, thresholds=thresholds, time_model=time_model, power_model=power_model,
        # the power explanation (exact contributions and LIME weights) is added when a hover or report asks for
        # it (server.with_explanation)
        power_explanation=False, lime=False,
    )
    return Settings(options=options, analyze_on_change=r.boolean("analyzeOnChange")), warnings


def for_folder(settings: Settings, folder: str | None) -> Settings:
    """The settings with relative `includeDirs` and `compileCommandsDir` resolved against a workspace folder.

    Relative paths in settings are written from the project's point of view, so they must not depend on the
    directory the editor (and so the server) was started in; without a folder they are left as written.
    """
    if not folder:
        return settings
    o = settings.options

    def absolute(p: str) -> str:
        expanded = os.path.expanduser(p)
        return expanded if os.path.isabs(expanded) else os.path.normpath(os.path.join(folder, expanded))

    options = replace(o, include_dirs=[absolute(d) for d in o.include_dirs],
                      compile_commands_dir=absolute(o.compile_commands_dir) if o.compile_commands_dir else None)
    return replace(settings, options=options)


def build_stamp(settings: Settings, path: str | None) -> str:
    """Which compile_commands.json a document's analysis reads, and its state, so that a regenerated one is
    not answered from the result cache."""
    o = settings.options
    if not o.compile_commands or not path:
        return ""
    db = find_database(Path(path), o.compile_commands_dir)
    if db is None:
        return ""
    try:
        st = db.stat()
    except OSError:
        return str(db)
    return f"{db}:{st.st_mtime_ns}:{st.st_size}"


def with_gpu(settings: Settings, gpu: str) -> Settings:
    """The same settings for another GPU profile (an id the caller checked)."""
    return replace(settings, options=replace(settings.options, gpu=gpu))
