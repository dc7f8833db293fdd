"""The pipeline's stages, one module each: a stage is a function of a kernel's `KernelContext` that reads the
results of the stages before it and writes its own (see `context.py` and docs/architecture.md). The models the
stages call live in the folders of their kind (`timing/`, `memory/`, `power/`) and know nothing of the context.

The package imports none of its modules, so that importing one stage does not load the others (the power stage
loads the power runtime, which the pipeline imports only when a kernel needs it).
"""
