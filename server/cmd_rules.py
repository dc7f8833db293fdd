"""`kerncast rules [CODE]`: every finding Kerncast can emit, from the rule registry.

Without a code: one line per rule (code, default severity, title). With a code: the rule's explanation, an
example, what to do, the Nsight Compute rule and metric that confirm it, its documentation and its fixes with
their applicability. `--format json` prints the same as data, `--format markdown` the README's table.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kerncast.analysis.rules import RULES, Rule, markdown_table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `kerncast rules`."""
    parser.add_argument("code", nargs="?", help="show one rule in full (e.g. shared-bank-conflict)")
    parser.add_argument("--format", choices=("text", "json", "markdown"), default="text", help="output format")


def rule_json(r: Rule) -> dict[str, Any]:
    return {"code": r.code.value, "severity": r.severity, "title": r.title, "explanation": r.explanation,
            "example": r.example, "remedy": r.remedy, "ncu_rule": r.ncu_rule, "ncu_metric": r.ncu_metric,
            "documentation": r.href,
            "fixes": [{"kind": x.kind.value, "applicability": x.applicability, "summary": x.summary}
                      for x in r.fixes]}


def rule_text(r: Rule) -> str:
    lines = [f"{r.code.value} ({r.severity}): {r.title}", "", r.explanation, "", f"Example: {r.example}",
             f"What to do: {r.remedy}"]
    if r.ncu_rule or r.ncu_metric:
        lines.append(f"Nsight Compute: rule {r.ncu_rule or '-'}, metric {r.ncu_metric or '-'}")
    for x in r.fixes:
        lines.append(f"Fix {x.kind.value} [{x.applicability}]: {x.summary}")
    lines.append(f"Documentation: {r.href}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.code:
        r = RULES.get(args.code)
        if r is None:
            print(f"kerncast rules: unknown code {args.code!r}; known codes: {', '.join(RULES)}", file=sys.stderr)
            return 2
        print(json.dumps(rule_json(r), indent=2) if args.format == "json" else rule_text(r))
        return 0
    if args.format == "json":
        print(json.dumps([rule_json(r) for r in RULES.values()], indent=2))
        return 0
    if args.format == "markdown":  # the README's findings table
        sys.stdout.write(markdown_table())
        return 0
    width = max(len(c) for c in RULES)
    for r in RULES.values():
        print(f"{r.code.value:<{width}}  {r.severity:<11}  {r.title}")
    return 0
