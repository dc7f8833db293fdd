"""A reader of Universal Binary JSON (UBJSON), the format XGBoost saves its `.ubj` models in.

The power model's run time reads the shipped tree ensembles itself (trees.py) so that a prediction never loads
XGBoost (about a second of imports). Only reading is needed: values are big-endian; typed arrays
(`[$<type>#<count>`) of numbers come back as numpy arrays, which is how XGBoost stores a tree's node columns.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

_NUMBERS = {b"i": ">i1", b"U": ">u1", b"I": ">i2", b"l": ">i4", b"L": ">i8", b"d": ">f4", b"D": ">f8"}
_SCALARS = {m: struct.Struct(f) for m, f in
            {b"i": ">b", b"U": ">B", b"I": ">h", b"l": ">i", b"L": ">q", b"d": ">f", b"D": ">d"}.items()}


class UBJSONError(ValueError):
    """The bytes are not a UBJSON document this reader understands."""


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise UBJSONError("truncated UBJSON document")
        out = self.data[self.pos:end]
        self.pos = end
        return out

    def _marker(self) -> bytes:
        return self._take(1)

    def _peek(self) -> bytes:
        return self.data[self.pos:self.pos + 1]

    def _number(self, marker: bytes) -> int | float:
        fmt = _SCALARS[marker]
        return fmt.unpack(self._take(fmt.size))[0]

    def _count(self) -> int:
        marker = self._marker()
        if marker not in _NUMBERS or marker in (b"d", b"D"):
            raise UBJSONError(f"bad length marker {marker!r}")
        n = self._number(marker)
        if n < 0:
            raise UBJSONError("negative length")
        return int(n)

    def _string(self) -> str:
        return self._take(self._count()).decode("utf-8")

    def value(self, marker: bytes | None = None) -> Any:
        marker = marker or self._marker()
        while marker == b"N":  # no-op
            marker = self._marker()
        if marker in _NUMBERS:
            return self._number(marker)
        if marker == b"Z":
            return None
        if marker in (b"T", b"F"):
            return marker == b"T"
        if marker == b"C":
            return self._take(1).decode("ascii")
        if marker == b"S":
            return self._string()
        if marker == b"H":
            return self._string()  # high-precision number kept as its text
        if marker == b"[":
            return self._array()
        if marker == b"{":
            return self._object()
        raise UBJSONError(f"unknown UBJSON marker {marker!r} at byte {self.pos - 1}")

    def _container_header(self) -> tuple[bytes | None, int | None]:
        kind = count = None
        if self._peek() == b"$":
            self.pos += 1
            kind = self._marker()
        if self._peek() == b"#":
            self.pos += 1
            count = self._count()
        elif kind is not None:
            raise UBJSONError("typed container without a count")
        return kind, count

    def _array(self) -> Any:
        kind, count = self._container_header()
        if count is None:
            out = []
            while (m := self._marker()) != b"]":
                out.append(self.value(m))
            return out
        if kind in _NUMBERS:
            dt = np.dtype(_NUMBERS[kind])
            return np.frombuffer(self._take(dt.itemsize * count), dtype=dt).astype(dt.newbyteorder("="))
        return [self.value(kind) for _ in range(count)]

    def _object(self) -> dict[str, Any]:
        kind, count = self._container_header()
        out: dict[str, Any] = {}
        if count is None:
            while self._peek() != b"}":
                if not self._peek():
                    raise UBJSONError("truncated UBJSON document")
                key = self._string()
                out[key] = self.value()
            self.pos += 1
            return out
        for _ in range(count):
            key = self._string()
            out[key] = self.value(kind)
        return out


def loads(data: bytes) -> Any:
    """The document in `data` (UBJSON bytes); raises UBJSONError on anything malformed."""
    try:
        return _Reader(bytes(data)).value()
    except (UnicodeDecodeError, KeyError, struct.error) as exc:
        raise UBJSONError(f"malformed UBJSON: {exc}") from None
