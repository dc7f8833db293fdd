"""Memory-access and divergence analysis: coalescing of global accesses, shared-memory bank conflicts and
divergent branches, worked out statically for the lanes of a warp from symbolic PTX register values."""

from kerncast.analysis.memory.analysis import AccessInfo, BranchInfo, MemoryAnalysis, analyze_memory

__all__ = ["AccessInfo", "BranchInfo", "MemoryAnalysis", "analyze_memory"]
