"""FileReport -> LSP data: diagnostics, where each kernel sits in the text, and the short numbers of a kernel.

Only conversion lives here; every number comes from the typed report (`KernelReport` and the model results it
holds), and any part of a report may be missing (`None`): it then reads "not available", never raises.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from kerncast.analysis.finding import Finding, Related
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.launch import Launch
from kerncast.analysis.power.results import EnergyEstimate
from kerncast.analysis.report import FileReport, KernelReport
from kerncast.analysis.rules import rule
from kerncast.analysis.source_model import KernelDefinition, SourceFacts, scanned
from kerncast.analysis.timing.estimate import TimeEstimate
from kerncast.server.positions import UTF16, range_to_client
from kerncast.server.units import fmt_energy_uj, fmt_time, time_range
from lsprotocol import types as lsp
from pygls import uris

SOURCE = "kerncast"

SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "information": lsp.DiagnosticSeverity.Information,
    "hint": lsp.DiagnosticSeverity.Hint,
}


# ------------------------------------------------------------------------------------------------ numbers


def fmt_watts(w: Any) -> str | None:
    return f"{w:.0f} W" if isinstance(w, int | float) else None


def energy_uj(energy: EnergyEstimate | None) -> float | None:
    """A kernel's board energy in µJ, None when there is none."""
    return float(energy.uj) if energy is not None else None


def fmt_dim(dim: Any) -> str:
    if not isinstance(dim, list | tuple) or not dim:
        return "?"
    vals = list(dim)
    while len(vals) > 1 and vals[-1] == 1:
        vals.pop()
    return "x".join(str(v) for v in vals)


def _sized(launch: Launch | None) -> bool:
    return launch is not None and launch.grid.value is not None and launch.block.value is not None


def launch_known(launch: Launch | None) -> bool:
    """True when grid and block come from the user (setting, annotation, flags or a launch site)."""
    return _sized(launch) and launch.grid.source != "default" and launch.block.source != "default"  # type: ignore[union-attr]


def launch_text(launch: Launch | None) -> str:
    if launch is None or not _sized(launch):
        return "<<<?, ?>>>"
    smem = launch.dynamic_shared_bytes.value or 0
    tail = f", {smem}" if smem else ""
    return f"<<<{fmt_dim(launch.grid.value)}, {fmt_dim(launch.block.value)}{tail}>>>"


def gpu_label(gpu_id: str) -> str:
    """Short GPU name for a lens ("V100"), from the profile when it loads."""
    try:
        name = load_profile(gpu_id).name
    except Exception:  # noqa: BLE001 - an unknown id still gets a label
        return gpu_id.upper()
    for prefix in ("NVIDIA ", "Tesla ", "GeForce ", "Quadro "):
        name = name.replace(prefix, "")
    return name.strip() or gpu_id.upper()


def fmt_time_range(t: TimeEstimate | None) -> str | None:
    """A report's time (`TimeEstimate`) with its range, e.g. `12.3 µs (9.1–16.0 µs)`; None when there is none."""
    if t is None:
        return None
    point = fmt_time(t.us)
    if point is None:
        return None
    rng = time_range(t)
    return f"{point} ({rng[0]}–{rng[1]})" if rng else point


ANNOTATION_HINT = "add // kerncast: grid=… block=…"


def kernel_summary(k: KernelReport, gpu: str) -> str:
    """One line: "≈ 12.3 µs · 87 W · 1.1 mJ on V100 @ <<<1024, 256>>>" with unknown parts said so, and how many
    loops run an assumed trip count ("≈ 3.1 µs (1.2–9.8 µs), 1 loop assumed")."""
    time = fmt_time_range(k.time)
    watts = fmt_watts(k.power.watts if k.power is not None else None)
    energy = fmt_energy_uj(energy_uj(k.energy))
    assumed = k.assumed_loops()
    if time and assumed:
        time += f", {assumed} loop{'s' if assumed != 1 else ''} assumed"
    parts = [f"≈ {time}" if time else "time not available", watts or "power not available",
             energy or "energy not available"]
    launch = k.launch
    if launch_known(launch):
        where = f"@ {launch_text(launch)}"
    elif launch is not None and launch.grid.value is not None:
        where = f"@ assumed {launch_text(launch)} — {ANNOTATION_HINT}"
    else:
        where = f"@ launch unknown — {ANNOTATION_HINT}"
    return f"{' · '.join(parts)} on {gpu_label(gpu)} {where}"


# ------------------------------------------------------------------------------------------------ text


def base_name(display: str) -> str:
    """`void ns::k<32>(float*)` -> `k`; a mangled or plain name stays as it is."""
    text = display
    depth = 0
    for i, ch in enumerate(text):
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch in "(<" and depth <= 1 and i > 0:
            text = text[:i]
            break
    text = text.strip().split()[-1] if text.strip() else display
    return text.split("::")[-1]


@dataclass(frozen=True)
class Anchor:
    """Where a kernel's name is written (0-based line, start and end character)."""

    line: int
    start: int
    end: int


@dataclass
class _TextFacts:
    """What the server reads once from one analysed text: the source model, the lines that declare a PTX
    `.entry`, and each kernel's anchor as it is first asked for."""

    lines: list[str]  # kept, so that the list's id is not reused while it is cached
    facts: SourceFacts | None
    entries: list[tuple[int, str]] | None = None  # made on the first kernel that the source model lacks (PTX)
    anchors: dict[tuple[str, str | None, Any], Anchor | None] = field(default_factory=dict)


#: recent documents' facts by the identity of their line list (a published result's `lines` never changes):
#: lenses, hovers, hints and actions ask once per kernel, and joining and scanning the whole text each time would
#: cost O(kernels x file size) on the event loop
_MODELS: OrderedDict[int, _TextFacts] = OrderedDict()
_MODELS_KEPT = 8
_MODELS_LOCK = threading.Lock()


def _text_facts(lines: list[str]) -> _TextFacts:
    with _MODELS_LOCK:
        hit = _MODELS.get(id(lines))
        if hit is not None and hit.lines is lines:
            return hit
    made = _TextFacts(lines, scanned("\n".join(lines)))
    with _MODELS_LOCK:
        _MODELS[id(lines)] = made
        while len(_MODELS) > _MODELS_KEPT:
            _MODELS.popitem(last=False)
    return made


def source_model(lines: list[str]) -> SourceFacts | None:
    """The library's source model of the document's text; None if it cannot be read."""
    return _text_facts(lines).facts


def forget_model(lines: list[str]) -> None:
    """Drop the source model of a closed document's lines (it would otherwise stay until pushed out)."""
    with _MODELS_LOCK:
        hit = _MODELS.get(id(lines))
        if hit is not None and hit.lines is lines:
            del _MODELS[id(lines)]


def _name_in_line(text: str, name: str) -> int:
    """Column of `name` as a whole word in a line of text (-1 if absent)."""
    start = 0
    while name:
        at = text.find(name, start)
        if at < 0:
            return -1
        before = text[at - 1] if at > 0 else " "
        after = text[at + len(name)] if at + len(name) < len(text) else " "
        if not (before.isalnum() or before in "_$") and not (after.isalnum() or after in "_$"):
            return at
        start = at + 1
    return -1


def kernel_definition(lines: list[str], k: KernelReport) -> KernelDefinition | None:
    """The source model's definition of a reported kernel: of its name, the last one at or above its line."""
    facts = source_model(lines)
    if facts is None:
        return None
    base = base_name(k.name or "")
    named = [d for d in facts.kernels if d.base_name == base]
    reported = k.line
    if isinstance(reported, int) and reported >= 1:
        above = [d for d in named if d.line <= reported]
        if above:
            return max(above, key=lambda d: d.line)
    return next((d for d in named if d.is_definition), named[0] if named else None)


def kernel_anchor(lines: list[str], k: KernelReport) -> Anchor | None:
    """Where the kernel's name is written: its definition in the source model, else (PTX) the `.entry` line
    that names it, else the start of its reported line. Found once per text and kernel: every lens, hint,
    hover and action asks for every kernel's anchor, and a PTX file's search passes over its lines."""
    text_facts = _text_facts(lines)
    key = (k.name, k.mangled, k.line)
    if key in text_facts.anchors:
        return text_facts.anchors[key]
    anchor = text_facts.anchors[key] = _find_anchor(text_facts, k)
    return anchor


def _find_anchor(text_facts: _TextFacts, k: KernelReport) -> Anchor | None:
    lines = text_facts.lines
    kdef = kernel_definition(lines, k)
    facts = text_facts.facts
    if kdef is not None and facts is not None:
        line, col = facts.position(kdef.name_offset)
        return Anchor(line - 1, col - 1, col - 1 + len(kdef.name))
    names = [n for n in (k.mangled, base_name(k.name or "")) if n]
    if text_facts.entries is None:
        text_facts.entries = [(ln, text) for ln, text in enumerate(lines) if ".entry" in text]
    for ln, text in text_facts.entries:
        for n in names:
            at = _name_in_line(text, n)
            if at >= 0:
                return Anchor(ln, at, at + len(n))
    reported = k.line
    if not isinstance(reported, int) or reported < 1 or not lines:
        return None
    last = min(reported - 1, len(lines) - 1)
    text = lines[last]
    return Anchor(last, len(text) - len(text.lstrip()), len(text.rstrip()))


def signature_end(lines: list[str], k: KernelReport, anchor: Anchor) -> lsp.Position:
    """After the `)` that closes the kernel's parameter list (the end of the anchor's line without one)."""
    kdef = kernel_definition(lines, k)
    facts = source_model(lines) if kdef is not None else None
    if kdef is not None and facts is not None and kdef.params_end_offset >= 0:
        line, col = facts.position(kdef.params_end_offset)
        return lsp.Position(line - 1, col)
    text = lines[anchor.line] if 0 <= anchor.line < len(lines) else ""
    return lsp.Position(anchor.line, len(text.rstrip()))


def launch_calls(lines: list[str], line0: int) -> list[tuple[str, int, int]]:
    """The launches on a line, from the source model: (base name, start of the name, end of `<<<`)."""
    facts = source_model(lines)
    if facts is None:
        return []
    out = []
    for site in facts.sites:
        if site.line == line0 + 1 and site.config_offset >= 0:
            end_line, end_col = facts.position(site.config_offset)
            end = end_col - 1 + 3 if end_line == site.line else len(lines[line0])
            out.append((site.base_name, site.column - 1, end))
    return out


def _word_end(text: str, col0: int) -> int:
    """End of the identifier-like word (letters, digits, `_`, `$`, `.`) that starts at col0."""
    end = col0
    while end < len(text) and (text[end].isalnum() or text[end] in "_$."):
        end += 1
    return end


def line_range(lines: list[str], line0: int) -> lsp.Range:
    text = lines[line0] if 0 <= line0 < len(lines) else ""
    start = len(text) - len(text.lstrip())
    end = len(text.rstrip("\r\n").rstrip())
    return lsp.Range(lsp.Position(line0, start), lsp.Position(line0, max(end, start)))


def finding_range(f: Finding | Related, lines: list[str]) -> lsp.Range:
    """0-based range of a finding (or a related location); an empty or unknown range covers its line's text."""
    line0 = max(0, int(f.line or 1) - 1)
    if lines:
        line0 = min(line0, len(lines) - 1)
    end_line0 = max(line0, int(f.end_line or f.line or 1) - 1)
    col0 = max(0, int(f.column or 1) - 1)
    end_col0 = max(0, int(f.end_column or 1) - 1)
    text = lines[line0] if 0 <= line0 < len(lines) else ""
    if (end_line0, end_col0) <= (line0, col0) or col0 >= len(text.rstrip()) and end_line0 == line0:
        return line_range(lines, line0)
    if end_line0 == line0 and end_col0 - col0 <= 1:
        end_col0 = max(end_col0, _word_end(text, col0))
    if lines and end_line0 >= len(lines):
        end_line0, end_col0 = len(lines) - 1, len(lines[-1])
    return lsp.Range(lsp.Position(line0, col0), lsp.Position(end_line0, end_col0))


def _related_uri(file: str | None, uri: str) -> str:
    if not file:
        return uri
    return uris.from_fs_path(file) or uri


def to_diagnostic(f: Finding, uri: str, lines: list[str]) -> lsp.Diagnostic:
    related = [
        lsp.DiagnosticRelatedInformation(
            location=lsp.Location(uri=_related_uri(r.file, uri), range=finding_range(r, lines)),
            message=r.message)
        for r in f.related
    ]
    message = f.message if f.kernel is None or f.kernel in f.message else f"{f.message} (kernel {f.kernel})"
    return lsp.Diagnostic(
        range=finding_range(f, lines), message=message, severity=SEVERITY.get(f.severity),
        code=str(f.code), code_description=lsp.CodeDescription(href=rule(f.code).href), source=SOURCE,
        related_information=related or None,
        # a client may sort a kernel's diagnostics by what fixing each is predicted to buy
        data={"gain": f.detail["gain"]} if "gain" in f.detail else None,
    )


def all_findings(report: FileReport) -> list[Finding]:
    """File-level findings then each kernel's, each kernel's marked with its kernel name."""
    out = list(report.findings)
    for k in report.kernels:
        for f in k.findings:
            if f.kernel is None:
                f.kernel = k.name
            out.append(f)
    return out


def encoded_diagnostic(f: Finding, uri: str, lines: list[str], encoding: str = UTF16) -> lsp.Diagnostic:
    """A finding as a diagnostic of the text `lines` (the file `uri`), its columns in the client's unit."""
    diag = to_diagnostic(f, uri, lines)
    diag.range = range_to_client(lines, diag.range, encoding)
    for r in diag.related_information or []:
        if r.location.uri == uri:
            r.location.range = range_to_client(lines, r.location.range, encoding)
    return diag


def to_diagnostics(report: FileReport, uri: str, lines: list[str], encoding: str = UTF16) -> list[lsp.Diagnostic]:
    """The findings as diagnostics of the analysed text, their columns in the client's unit (`encoding`)."""
    return [encoded_diagnostic(f, uri, lines, encoding) for f in all_findings(report)]


def internal_error_diagnostic(message: str) -> lsp.Diagnostic:
    return lsp.Diagnostic(range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)),
                          message=f"Kerncast could not analyse this file: {message}",
                          severity=lsp.DiagnosticSeverity.Error, code="internal-error", source=SOURCE)
