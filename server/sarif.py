"""`kerncast analyze --format sarif`: the findings of a FileReport as SARIF 2.1.0 for CI systems.

The results are the same findings the language server publishes as diagnostics (file-level findings, then each
kernel's), with the same codes as rule ids, levels from the severities, 1-based regions (end column exclusive,
as SARIF defines), related locations, and the fixes' edits as SARIF fixes. The rule table is the whole rule
registry, so every code Kerncast can emit is named in every log.
"""

from __future__ import annotations

import os
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from kerncast.analysis.finding import Finding, Fix, Span
from kerncast.analysis.report import FileReport
from kerncast.analysis.rules import RULES

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/kerncast/kerncast"

LEVEL = {"error": "error", "warning": "warning", "information": "note", "hint": "note"}

def sarif_rules() -> list[dict[str, Any]]:
    """Every rule of the registry as a SARIF `reportingDescriptor`, in the registry's order."""
    out = []
    for r in RULES.values():
        props: dict[str, Any] = {"fixes": [{"kind": str(x.kind), "applicability": x.applicability,
                                            "summary": x.summary} for x in r.fixes]}
        if r.ncu_rule:
            props["nsightComputeRule"] = r.ncu_rule
        if r.ncu_metric:
            props["nsightComputeMetric"] = r.ncu_metric
        out.append({"id": r.code.value, "name": r.name, "shortDescription": {"text": r.title},
                    "fullDescription": {"text": r.explanation},
                    "help": {"text": f"{r.explanation} Example: {r.example} What to do: {r.remedy}"},
                    "helpUri": r.href, "defaultConfiguration": {"level": LEVEL[r.severity]},
                    "properties": props})
    return out


def _artifact_uri(file: str) -> tuple[str, str | None]:
    """(uri, uriBaseId): absolute paths as file URIs, relative ones against %SRCROOT%."""
    p = Path(file)
    if p.is_absolute():
        return p.as_uri(), None
    return Path(os.path.normpath(file)).as_posix(), "%SRCROOT%"


def _location(uri: str, base: str | None, span: Span) -> dict[str, Any]:
    line, column, end_line, end_column = span
    region: dict[str, Any] = {"startLine": max(1, line)}
    if column >= 1:
        region["startColumn"] = column
    if end_line >= line:
        region["endLine"] = end_line
    if end_column > column >= 1 or (end_line > line and end_column >= 1):
        region["endColumn"] = end_column
    artifact: dict[str, Any] = {"uri": uri, "index": 0}
    if base:
        artifact["uriBaseId"] = base
    return {"physicalLocation": {"artifactLocation": artifact, "region": region}}


def _findings(report: FileReport) -> list[Finding]:
    """The file's findings, then every kernel's (those of included headers' kernels carry their file)."""
    out = list(report.findings)
    for k in report.all_kernels():
        for f in k.findings:
            out.append(f if f.kernel is not None else replace(f, kernel=k.name))
    return out


def _result(f: Finding, rule_index: int, uri: str, base: str | None) -> dict[str, Any]:
    location = _location(uri, base, f.span)
    if f.file:  # a finding in a header the analysed file includes: that file's location (no artifact index)
        uri, base = _artifact_uri(f.file)
        location = _location(uri, base, f.span)
        location["physicalLocation"]["artifactLocation"].pop("index", None)
    res: dict[str, Any] = {
        "ruleId": str(f.code), "ruleIndex": rule_index, "level": LEVEL.get(f.severity, "warning"),
        "message": {"text": f.message},
        "locations": [location],
    }
    related = []
    for i, r in enumerate(f.related):
        r_uri, r_base = (uri, base) if not r.file else _artifact_uri(r.file)
        loc = _location(r_uri, r_base, r.span)
        if r.file:
            loc["physicalLocation"]["artifactLocation"].pop("index", None)
        related.append({"id": i, "message": {"text": r.message}, **loc})
    if related:
        res["relatedLocations"] = related
    props: dict[str, Any] = {}
    if f.kernel:
        props["kernel"] = f.kernel
    if f.detail:
        props["detail"] = f.detail
    if f.fix is not None:
        props["fix"] = f.fix.to_json()
    if props:
        res["properties"] = props
    fixes = [_sarif_fix(x, uri, base) for x in f.fixes() if x.edits and x.applicability != "snippet"]
    if fixes:
        res["fixes"] = fixes
    return res


def _sarif_fix(fix: Fix, uri: str, base: str | None) -> dict[str, Any]:
    """A fix's edits as SARIF replacements (1-based regions, end column exclusive, as the edits are)."""
    artifact: dict[str, Any] = {"uri": uri}
    if base:
        artifact["uriBaseId"] = base
    replacements = [{"deletedRegion": {"startLine": e.line, "startColumn": e.column, "endLine": e.end_line,
                                       "endColumn": e.end_column},
                     "insertedContent": {"text": e.new_text}} for e in fix.edits]
    return {"description": {"text": f"{fix.description} ({fix.applicability})"},
            "artifactChanges": [{"artifactLocation": artifact, "replacements": replacements}]}


def _version() -> str:
    try:
        return version("kerncast")
    except PackageNotFoundError:
        return "0.1.0"


def to_sarif(report: FileReport) -> dict[str, Any]:
    """The SARIF 2.1.0 log (one run) of one analysed file."""
    findings = _findings(report)
    rules = sarif_rules()
    index = {r["id"]: i for i, r in enumerate(rules)}
    uri, base = _artifact_uri(report.file)
    artifact: dict[str, Any] = {"location": {"uri": uri}}
    if base:
        artifact["location"]["uriBaseId"] = base
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "Kerncast", "version": _version(), "informationUri": INFO_URI, "rules": rules}},
        "artifacts": [artifact],
        "results": [_result(f, index[str(f.code)], uri, base) for f in findings],
        "properties": {"gpu": report.gpu, "arch": report.arch, "toolkit": report.toolkit,
                       "kernels": [k.name for k in report.all_kernels()]},
    }
    if not report.ok:
        run["invocations"] = [{"executionSuccessful": False, "toolExecutionNotifications": [
            {"level": "error", "message": {"text": f.message}} for f in report.findings if f.severity == "error"]}]
    else:
        run["invocations"] = [{"executionSuccessful": True}]
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
