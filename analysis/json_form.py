"""The JSON form of a model's result: the protocol every reported value follows, and a mixin that derives it
from a dataclass's fields.

It sits below every model so that a model's result type can have its JSON form without importing the report
that shows it.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, ClassVar, Protocol


class JsonReportable(Protocol):
    """A model result (time, power, energy, launch) that knows its own JSON form."""

    def to_json(self) -> dict[str, Any]: ...


class FieldsJson:
    """Mixin for a dataclass whose JSON form is its own fields, by name and in declaration order, up to and
    including `JSON_LAST` (every field when it is empty): the fields after it serve the analyses only.

    Values are taken as they are (no copy, no conversion), so such a class's JSON keys, order and value types
    follow its field list and cannot drift from it.
    """

    __slots__ = ()
    JSON_LAST: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):  # type: ignore[arg-type]
            out[f.name] = getattr(self, f.name)
            if f.name == self.JSON_LAST:
                break
        return out
