"""Launch configuration: grid, block, dynamic shared memory, parameter values and the default trip count.

A kernel's time depends on how it is launched, which PTX does not say. This module gathers the launch from,
in order of precedence: command-line flags, editor settings, `// kerncast:` annotations, the `<<<>>>` call
site in the same source file, the PTX `.reqntid` directive (block only), and finally a stated default.
Every field is a `Sourced` value that remembers where it came from, and every default or ambiguity becomes
a sentence in `Launch.assumptions`, so that a prediction can always say what it assumed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerncast.analysis.source_model import (
    Annotation,
    KernelDefinition,
    LaunchSite,
    LaunchValues,
    SourceFacts,
    find_annotations,
    find_kernel_definitions,
    find_launch_sites,
    parse_count,
    parse_dim,
    scan_file,
    scan_source,
)

SOURCES = ("cli", "setting", "annotation", "placeholder", "launch-site", "ptx", "default")

DEFAULT_BLOCK: tuple[int, int, int] = (256, 1, 1)
DEFAULT_GRID: tuple[int, int, int] = (1024, 1, 1)
DEFAULT_LOOPS = 10

Dim = tuple[int, int, int]


@dataclass(frozen=True)
class Sourced:
    """A value and where it came from: one of `SOURCES`, with the line and a human-readable detail."""

    value: Any
    source: str
    line: int | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return {"value": value, "source": self.source, "line": self.line, "detail": self.detail}


#: sources that are only the tool's guess, not something the user or the code said: the default, and a
#: placeholder the user has not filled in yet (`// kerncast: loops=10?`)
GUESSED_SOURCES = frozenset({"default", "placeholder"})


def _three(value: Any) -> Dim | None:
    """One to three positive ints as a 3-tuple padded with 1s; None for anything else."""
    try:
        dims = tuple(int(d) for d in value)
    except (TypeError, ValueError):
        return None
    if not 1 <= len(dims) <= 3 or any(d <= 0 for d in dims):
        return None
    return (dims + (1, 1))[:3]  # type: ignore[return-value]


# ------------------------------------------------------------------------------------------ user input


def parse_param(text: str) -> tuple[str, int]:
    """Parse `NAME=VALUE` (NAME as declared in the source, or a 0-based parameter index)."""
    name, sep, value = str(text).partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not re.fullmatch(r"[A-Za-z_]\w*|\d+", name) or not re.fullmatch(r"-?\d+", value):
        raise ValueError(f"expected NAME=INTEGER (NAME as declared in the kernel, or its 0-based index), "
                         f"got {text!r}")
    return name, int(value)


@dataclass(kw_only=True)
class LaunchOverrides(LaunchValues):
    """Launch values given from outside the source: CLI flags (`source="cli"`) or editor settings."""

    source: str = "cli"

    @classmethod
    def from_strings(cls, grid: str | None = None, block: str | None = None, smem: str | int | None = None,
                     loops: str | int | None = None, params: list[str] | None = None,
                     source: str = "cli") -> LaunchOverrides:
        """Build overrides from flag strings; raises ValueError naming the bad flag."""
        def dim(flag: str, text: str | None) -> Dim | None:
            if text is None:
                return None
            try:
                return parse_dim(text)
            except ValueError as exc:
                raise ValueError(f"--{flag}: {exc}") from None
        return cls(
            grid=dim("grid", grid), block=dim("block", block),
            smem=None if smem is None else parse_count(str(smem), "--smem"),
            loops=None if loops is None else parse_count(str(loops), "--loops"),
            params=dict(parse_param(p) for p in params or ()), source=source,
        )


# ------------------------------------------------------------------------------------------ the launch


@dataclass
class Launch:
    """How one kernel is launched, each field with its source, and what was assumed to get there."""

    kernel: str
    grid: Sourced
    block: Sourced
    dynamic_shared_bytes: Sourced
    params: dict[str, Sourced]
    loops: Sourced
    assumptions: list[str] = field(default_factory=list)
    param_names: list[str | None] = field(default_factory=list)

    @property
    def threads_per_block(self) -> int | None:
        return math.prod(self.block.value) if self.block.value is not None else None

    @property
    def blocks(self) -> int | None:
        return math.prod(self.grid.value) if self.grid.value is not None else None

    @property
    def dynamic_shared(self) -> int:
        """The dynamic shared memory per block in bytes (0 where none is given)."""
        return int(self.dynamic_shared_bytes.value or 0)

    @property
    def total_threads(self) -> int | None:
        tpb, blocks = self.threads_per_block, self.blocks
        return tpb * blocks if tpb is not None and blocks is not None else None

    @property
    def known(self) -> dict[str, bool]:
        """Per field, whether its value is known (given or found) rather than only the tool's default."""
        return {name: s.source not in GUESSED_SOURCES
                for name, s in (("grid", self.grid), ("block", self.block),
                                ("dynamic_shared_bytes", self.dynamic_shared_bytes), ("loops", self.loops))}

    def grid_dims(self) -> Dim | None:
        """The grid as three positive ints (padded with 1s), None when it is not set."""
        return _three(self.grid.value)

    def block_dims(self, *, known_only: bool = False) -> Dim | None:
        """The block as three positive ints; with `known_only`, None when it is only the default (a guess,
        which a warning must not rest on)."""
        if known_only and self.block.source in GUESSED_SOURCES:
            return None
        return _three(self.block.value)

    def known_params(self) -> dict[str, int]:
        """The integer parameter values that are known (not defaults), by name."""
        return {str(name): s.value for name, s in self.params.items()
                if s.source not in GUESSED_SOURCES and isinstance(s.value, int) and not isinstance(s.value, bool)}

    def param(self, index: int) -> Sourced | None:
        """The known value of the parameter at a 0-based position (by its name when the name is known)."""
        if 0 <= index < len(self.param_names) and self.param_names[index] in self.params:
            return self.params[self.param_names[index] or ""]
        return self.params.get(str(index))

    def to_json(self) -> dict[str, Any]:
        def dim(s: Sourced) -> list[int] | None:
            return list(s.value) if s.value is not None else None
        fields = {"grid": self.grid, "block": self.block, "dynamic_shared_bytes": self.dynamic_shared_bytes,
                  "loops": self.loops}
        return {
            "kernel": self.kernel,
            "grid": dim(self.grid), "block": dim(self.block),
            "dynamic_shared_bytes": self.dynamic_shared_bytes.value,
            "loops": self.loops.value,
            "source": {**{k: v.source for k, v in fields.items()},
                       "params": {k: v.source for k, v in self.params.items()}},
            "detail": {k: v.detail for k, v in fields.items() if v.detail},
            "params": {k: v.value for k, v in self.params.items()},
            "assumptions": list(self.assumptions),
        }


def split_kernel_name(display_name: str) -> tuple[str, list[str] | None]:
    """`void ns::k<32, float>(float*)` -> ("k", ["32", "float"]); no template arguments -> None."""
    text = display_name.strip()
    depth = 0
    for i, ch in enumerate(text):  # drop a parameter list: the first '(' outside template brackets
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "(" and depth == 0 and i > 0:
            text = text[:i]
            break
    args = None
    if text.endswith(">") and "<" in text:
        open_at = _template_open(text)
        args = _split_template_args(text[open_at + 1:-1])
        text = text[:open_at]
    base = text.split()[-1] if text.split() else text
    return base.rsplit("::", 1)[-1], args


def _template_open(text: str) -> int:
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {">": 1, "<": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return text.index("<")


def _split_template_args(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += {"<": 1, "(": 1, ">": -1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*out, cur.strip()] if cur.strip() or out else []


def _normal_template_arg(text: str) -> str:
    """Demangled template arguments read `32`, `32u`, `(int)32`, `true`: normalise for comparison."""
    t = re.sub(r"^\((?:[\w ]+)\)", "", text.strip())
    t = re.sub(r"(?<=\d)[uUlL]+$", "", t)
    return {"true": "1", "false": "0"}.get(t, re.sub(r"\s+", " ", t))


#: type names a launch site may write for what the demangled kernel name spells otherwise: CUDA's half and
#: bfloat16 aliases and the <cstdint> types as nvcc's 64-bit Linux demangler writes them
_TYPE_ALIASES = {
    "half": "__half", "half2": "__half2", "nv_bfloat16": "__nv_bfloat16", "nv_bfloat162": "__nv_bfloat162",
    "unsigned": "unsigned int", "size_t": "unsigned long", "ptrdiff_t": "long",
    "int8_t": "signed char", "uint8_t": "unsigned char", "int16_t": "short", "uint16_t": "unsigned short",
    "int32_t": "int", "uint32_t": "unsigned int", "int64_t": "long", "uint64_t": "unsigned long",
}


def _same_template_arg(mine: str, want: str) -> bool:
    """Whether a launch site's argument names the demangled one: equal once aliases are resolved, or the same
    name qualified less (`wmma::precision::tf32` for `nvcuda::wmma::precision::tf32`, after a `using`)."""
    mine, want = (_TYPE_ALIASES.get(t.removeprefix("std::"), t) for t in (mine, want))
    return mine == want or want.endswith("::" + mine) or mine.endswith("::" + want)


def _site_matches_template(site: LaunchSite, wanted: list[str]) -> bool | None:
    """True/False when the site's template arguments can be compared with the wanted ones, else None."""
    if len(site.template_args) != len(wanted):
        return False if site.template_args else None
    for raw, folded, want in zip(site.template_args, site.template_values, wanted, strict=True):
        mine = str(folded.value) if folded.as_int() is not None else re.sub(r"\s+", " ", raw)
        if not folded.known and re.fullmatch(r"-?\d+", _normal_template_arg(want)):
            return None
        if not _same_template_arg(mine, _normal_template_arg(want)):
            return False
    return True


def _choose_site(base: str, targs: list[str] | None, facts: SourceFacts | None, assumptions: list[str]
                 ) -> LaunchSite | None:
    """The launch site of the kernel (its base name and template arguments, `split_kernel_name`): by base name,
    then by template arguments when they can be compared."""
    if facts is None:
        return None
    sites = facts.sites_of(base)
    if targs is not None and sites:
        verdicts = [_site_matches_template(s, targs) for s in sites]
        exact = [s for s, v in zip(sites, verdicts, strict=True) if v]
        candidates = exact or [s for s, v in zip(sites, verdicts, strict=True) if v is None]
        if not candidates:
            seen = "; ".join(f"<{', '.join(s.template_args)}> at line {s.line}" for s in sites)
            assumptions.append(f"{base} is launched in this file only with other template arguments ({seen}), "
                               f"not as <{', '.join(targs)}>; those launches are not used")
        elif not exact:
            assumptions.append(f"the template arguments of the launch of {base} at line {candidates[0].line} "
                               f"could not be folded; assumed it launches <{', '.join(targs)}>")
        sites = candidates
    if not sites:
        return None
    first = sites[0]
    for other in sites[1:]:
        if not other.same_config(first):
            assumptions.append(f"{base} is also launched at line {other.line} with {other.config_text}; "
                               f"using the launch at line {first.line} ({first.config_text})")
    return first


def _merged_annotation(annotations: list[Annotation], target: str, line: int | None) -> list[Annotation]:
    return [a for a in annotations if a.target == target and a.target_line == line and line is not None]


def infer_launch(kernel_name: str, cuda_source: str | None, overrides: LaunchOverrides | None = None,
                 settings: LaunchOverrides | None = None, kernel_params: list[str] | None = None,
                 reqntid: tuple[int, ...] | None = None, default_block: Dim | None = DEFAULT_BLOCK,
                 default_grid: Dim | None = DEFAULT_GRID, default_loops: int = DEFAULT_LOOPS,
                 source_path: str | None = None, include_dirs: list[str] | None = None,
                 scan: Callable[[str, str | Path | None, list[str] | None], SourceFacts] = scan_file) -> Launch:
    """The launch of `kernel_name` (its demangled display name), each field from the best source there is.

    Precedence per field: CLI overrides > settings > an annotation above the launch > an annotation above
    the kernel definition > the `<<<>>>` site in the same file > PTX `.reqntid` (block only) > the default.
    An annotation above the launch wins over one above the kernel because it is the more specific of the
    two. Never raises: a source that cannot be scanned is recorded as an assumption and the defaults apply.
    With `source_path`, kernels defined in `#include`d `.cu`/`.cuh` files (beside it or in `include_dirs`)
    are known too, so their parameters can be given by name. `scan` reads the source's facts: `scan_file`, or
    an analysis's `FileScans.scan`, which reads a file once for all its kernels.
    """
    assumptions: list[str] = []
    facts = None
    if cuda_source:
        try:
            facts = scan(cuda_source, source_path, include_dirs)
        except (ValueError, IndexError, RecursionError) as exc:
            assumptions.append(f"the CUDA source could not be scanned for launches ({exc})")
    base, targs = split_kernel_name(kernel_name)
    site = _choose_site(base, targs, facts, assumptions)
    kdef = facts.kernel(base) if facts else None
    names: list[str | None] = list(kernel_params) if kernel_params is not None else \
        (list(kdef.params) if kdef else [])
    annotations = facts.annotations if facts else []
    kernel_line = kdef.line if kdef and kdef.file is None else None  # an included kernel's lines are not ours
    layers = _layers(overrides, settings, _merged_annotation(annotations, "launch", site.line if site else None),
                     _merged_annotation(annotations, "kernel", kernel_line), site, assumptions)
    grid = _pick("grid", layers, assumptions) or _default(
        "grid", default_grid, assumptions, "blocks", "--grid or a // kerncast: grid=... annotation")
    block = _pick("block", layers, assumptions)
    if block is None and reqntid:
        dims = tuple(reqntid) + (1,) * (3 - len(reqntid))
        block = Sourced(dims[:3], "ptx", None, ".reqntid directive")
    block = block or _default("block", default_block, assumptions, "threads per block",
                              "--block or a // kerncast: block=... annotation")
    smem = _pick("smem", layers, assumptions) or _default(
        "smem", 0, assumptions, "bytes of dynamic shared memory", "--smem or a // kerncast: smem=... annotation")
    loops = _pick("loops", layers, assumptions) or Sourced(default_loops, "default", None,
                                                           "default trip count for loops of unknown count")
    params = _params(layers, names, kernel_name, assumptions)
    return Launch(kernel=kernel_name, grid=grid, block=block, dynamic_shared_bytes=smem, params=params,
                  loops=loops, assumptions=assumptions, param_names=names)


@dataclass
class _Layer:
    """One source of launch values, ready for `_pick`: values by field, the source name and a detail."""

    source: str
    values: dict[str, Any]
    unknown: dict[str, str]
    params: dict[str, int]
    line: int | None
    detail: str
    #: an assumption the layer's values rest on, stated once when one of them is used
    caveat: str = ""


def _layers(overrides: LaunchOverrides | None, settings: LaunchOverrides | None,
            launch_anns: list[Annotation], kernel_anns: list[Annotation], site: LaunchSite | None,
            assumptions: list[str]) -> list[_Layer]:
    layers = []
    for ov, name in ((overrides, "cli"), (settings, "setting")):
        if ov is not None:
            src = ov.source if ov.source in SOURCES else name
            label = "command line" if src == "cli" else "settings"
            layers.append(_Layer(src, ov.sizes(), {}, dict(ov.params), None, f"from the {label}"))
    for anns, where in ((launch_anns, "above the launch"), (kernel_anns, "above the kernel")):
        for ann in reversed(anns):  # the annotation nearest the target wins
            for err in ann.errors:
                assumptions.append(f"ignored part of the annotation at line {ann.line}: {err}")
            stated = {k: (None if k in ann.placeholders else v) for k, v in ann.sizes().items()}
            layers.append(_Layer("annotation", stated, {}, dict(ann.params), ann.line,
                                 f"// kerncast: annotation at line {ann.line} ({where})"))
            if ann.placeholders:
                layers.append(_Layer("placeholder", {k: ann.sizes()[k] for k in ann.placeholders}, {}, {},
                                     ann.line, f"placeholder in the // kerncast: annotation at line {ann.line} "
                                     f"({where}; still assumed until the ? is removed)"))
    if site is not None:
        values, unknown = {}, {}
        for key, folded, expr in (("grid", site.grid, site.grid_expr), ("block", site.block, site.block_expr),
                                  ("smem", site.smem, site.smem_expr or "0")):
            if folded.known:
                values[key] = folded.as_dim3() if key != "smem" else folded.as_int()
            else:
                unknown[key] = f"`{expr}` at line {site.line} could not be folded: {folded.reason}"
        params = {str(i): f.as_int() for i, f in enumerate(site.arg_values) if f.as_int() is not None}
        layers.append(_Layer("launch-site", values, unknown, params, site.line,  # type: ignore[arg-type]
                             f"{site.config_text} at line {site.line}", _caller_caveat(site)))
    return layers


def _caller_caveat(site: LaunchSite) -> str:
    """What the launch's values took from the calls of the function around it, if anything."""
    folded = (site.grid, site.block, site.smem, *site.arg_values)
    via = list(dict.fromkeys(note for f in folded if f.known for note in f.via))
    if not via:
        return ""
    return (f"the launch at line {site.line} is inside a function; its values use {'; '.join(via)} "
            "(the calls found in this file and the files beside it; a call elsewhere could pass other values)")


def _use(layer: _Layer, assumptions: list[str]) -> None:
    """Record the caveat of a layer whose value is used (once)."""
    if layer.caveat and layer.caveat not in assumptions:
        assumptions.append(layer.caveat)


def _pick(key: str, layers: list[_Layer], assumptions: list[str]) -> Sourced | None:
    """The value of a field from the first layer that has it; unfoldable launch values become assumptions."""
    for layer in layers:
        if layer.values.get(key) is not None:
            _use(layer, assumptions)
            return Sourced(layer.values[key], layer.source, layer.line, layer.detail)
        if key in layer.unknown:
            assumptions.append(f"{key}: {layer.unknown[key]}")
    return None


def _default(key: str, value: Any, assumptions: list[str], unit: str, how: str) -> Sourced:
    """A default value, and the assumption sentence that says it was assumed and how to set it."""
    if value is None:
        assumptions.append(f"{key}: unknown (no launch found; set it with {how})")
        return Sourced(None, "default", None, "unknown")
    shown = "×".join(str(v) for v in value) if isinstance(value, tuple) else str(value)
    assumptions.append(f"{key}: no value found; assumed {shown} {unit} (default; set it with {how})")
    return Sourced(value, "default", None, "default")


def _params(layers: list[_Layer], names: list[str | None], kernel: str,
            assumptions: list[str]) -> dict[str, Sourced]:
    """Parameter values by name (by index text when the name is unknown); the first layer wins."""
    out: dict[str, Sourced] = {}
    for layer in layers:
        for key, value in layer.params.items():
            name = _param_key(key, names)
            if name is None:
                if layer.source != "launch-site":
                    known = ", ".join(n for n in names if n) or "none known"
                    assumptions.append(f"ignored {layer.source} value for '{key}': not a parameter of {kernel} "
                                       f"(parameters: {known})")
                continue
            if not names and not key.isdigit():
                assumptions.append(f"the parameter names of {kernel} are not known (no CUDA source); "
                                   f"'{key}' is kept by name, give its 0-based index to apply it to the PTX")
            if name not in out:
                _use(layer, assumptions)
                out[name] = Sourced(value, layer.source, layer.line, layer.detail)
    return out


def _param_key(key: str, names: list[str | None]) -> str | None:
    """Map a parameter given by name or 0-based index to the key used in `Launch.params`."""
    if key.isdigit():
        index = int(key)
        if names and index >= len(names):
            return None
        return names[index] or key if index < len(names) else key
    if names and key not in names:
        return None
    return key


#: the source scanning lives in `source_model`; these names stay importable from here
__all__ = ["Annotation", "KernelDefinition", "Launch", "LaunchOverrides", "LaunchSite", "Sourced", "SourceFacts",
           "find_annotations", "find_kernel_definitions", "find_launch_sites", "infer_launch", "parse_count",
           "parse_dim", "parse_param", "scan_source", "split_kernel_name"]
