"""FileReport -> LSP data: diagnostics, where each kernel sits in the text, and the short numbers of a kernel.

Only conversion lives here; every number comes from the typed report (`KernelReport` and the model results it
holds), and any part of a report may be missing (`None`): it then reads "not available", never raises.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from kerncast.analysis.finding import Finding, Span
from kerncast.analysis.gpus import load_profile
from kerncast.analysis.launch import Launch
from kerncast.analysis.locate import finding_place, kernel_places, places_of
from kerncast.analysis.places import FindingPlace, KernelPlace
from kerncast.analysis.power.results import EnergyEstimate
from kerncast.analysis.report import FileReport, KernelReport
from kerncast.analysis.rules import rule
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


def gpu_label(gpu_id: str, name: str | None = None) -> str:
    """Short GPU name for a lens ("V100"): of the display name the report carries (`FileReport.gpu_name`),
    else of the profile's when it loads."""
    if name is None:
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


def kernel_summary(k: KernelReport, gpu: str, gpu_name: str | None = None) -> str:
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
    return f"{' · '.join(parts)} on {gpu_label(gpu, gpu_name)} {where}"


# ------------------------------------------------------------------------------------------------ text


@dataclass(frozen=True)
class Anchor:
    """Where a kernel's name is written (0-based line, start and end character)."""

    line: int
    start: int
    end: int


def kernel_place(report: FileReport, lines: list[str], k: KernelReport) -> KernelPlace | None:
    """Where one of the report's kernels is written in its text (`lines`), as the library read it."""
    return (kernel_places(report, lines).kernels or {}).get(k.mangled)


def kernel_anchor(report: FileReport, lines: list[str], k: KernelReport) -> Anchor | None:
    """Where the kernel's name is written: its definition, else (PTX) the `.entry` line that names it, else
    its reported line; None when the text has none of them."""
    place = kernel_place(report, lines, k)
    if place is None:
        return None
    return Anchor(place.name.line - 1, place.name.column - 1, place.name.end_column - 1)


def signature_end(report: FileReport, lines: list[str], k: KernelReport) -> lsp.Position | None:
    """After the `)` that closes the kernel's parameter list (the end of its name's line without one)."""
    place = kernel_place(report, lines, k)
    if place is None:
        return None
    line, column = place.signature_end
    return lsp.Position(line - 1, column - 1)


def launch_calls(report: FileReport, lines: list[str], line0: int) -> list[tuple[str, int, int]]:
    """The launches on a line: (mangled name of the kernel, start of its name, end of `<<<`), 0-based."""
    return [(site.kernel, site.span.column - 1, site.span.end_column - 1)
            for site in kernel_places(report, lines).launches_on(line0 + 1)]


def to_range(span: Span) -> lsp.Range:
    """A library span (1-based, end exclusive) as an LSP range of the same text (0-based, code points)."""
    return lsp.Range(lsp.Position(span.line - 1, span.column - 1), lsp.Position(span.end_line - 1, span.end_column - 1))


def placed(report: FileReport, lines: list[str], f: Finding) -> FindingPlace:
    """Where the editor shows one of the report's findings and its related locations."""
    place = places_of(report, lines).findings.get(id(f))
    return place if place is not None else finding_place(f, lines)  # not one of the report's own objects


def finding_range(report: FileReport, lines: list[str], f: Finding) -> lsp.Range:
    """0-based range of one of the report's findings in its text."""
    return to_range(placed(report, lines, f).span)


def _related_uri(file: str | None, uri: str) -> str:
    if not file:
        return uri
    return uris.from_fs_path(file) or uri


def finding_id(f: Finding) -> str:
    """A finding's id, which its diagnostic carries in `data` and a code action request sends back: made of
    what the finding says and where, so that a diagnostic the client still shows from an earlier publication
    finds its finding as long as the finding is unchanged, and finds nothing once it is gone."""
    said = repr((f.file, f.kernel, str(f.code), f.line, f.column, f.end_line, f.end_column, f.message))
    return hashlib.blake2b(said.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def findings_by_id(report: FileReport) -> dict[str, Finding]:
    """The findings a document's diagnostics are made of (`all_findings`), by their id."""
    return {finding_id(f): f for f in reversed(all_findings(report))}  # of equal ones, the first


def to_diagnostic(f: Finding, uri: str, place: FindingPlace) -> lsp.Diagnostic:
    """A finding as a diagnostic of the analysed text (code-point columns), placed where `place` says."""
    related = [
        lsp.DiagnosticRelatedInformation(
            location=lsp.Location(uri=_related_uri(r.file, uri), range=to_range(span)), message=r.message)
        for r, span in zip(f.related, place.related, strict=True)
    ]
    message = f.message if f.kernel is None or f.kernel in f.message else f"{f.message} (kernel {f.kernel})"
    return lsp.Diagnostic(
        range=to_range(place.span), message=message, severity=SEVERITY.get(f.severity),
        code=str(f.code), code_description=lsp.CodeDescription(href=rule(f.code).href), source=SOURCE,
        related_information=related or None,
        # the id keys the finding's code actions; a client may sort a kernel's diagnostics by what fixing each
        # is predicted to buy
        data={"id": finding_id(f), **({"gain": f.detail["gain"]} if "gain" in f.detail else {})},
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


def encoded_diagnostic(report: FileReport, f: Finding, uri: str, lines: list[str],
                       encoding: str = UTF16) -> lsp.Diagnostic:
    """One of the report's findings as a diagnostic of its text `lines` (the file `uri`), its columns in the
    client's unit."""
    diag = to_diagnostic(f, uri, placed(report, lines, f))
    diag.range = range_to_client(lines, diag.range, encoding)
    for r in diag.related_information or []:
        if r.location.uri == uri:
            r.location.range = range_to_client(lines, r.location.range, encoding)
    return diag


def to_diagnostics(report: FileReport, uri: str, lines: list[str], encoding: str = UTF16) -> list[lsp.Diagnostic]:
    """The findings as diagnostics of the analysed text, their columns in the client's unit (`encoding`)."""
    return [encoded_diagnostic(report, f, uri, lines, encoding) for f in all_findings(report)]


def internal_error_diagnostic(message: str) -> lsp.Diagnostic:
    return lsp.Diagnostic(range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)),
                          message=f"Kerncast could not analyse this file: {message}",
                          severity=lsp.DiagnosticSeverity.Error, code="internal-error", source=SOURCE)
