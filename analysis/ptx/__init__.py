"""PTX front end: `parse_ptx(text) -> Module`, raising `PtxSyntaxError` with a position on malformed input."""

from kerncast.analysis.ptx.errors import PtxSyntaxError
from kerncast.analysis.ptx.model import Function, Instruction, Module
from kerncast.analysis.ptx.parser import kernel_shared_bytes, parse_ptx

__all__ = ["Function", "Instruction", "Module", "PtxSyntaxError", "kernel_shared_bytes", "parse_ptx"]
