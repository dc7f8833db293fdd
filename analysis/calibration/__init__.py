"""Calibration of GPU profiles on real hardware, and measured ground truth for the predictions.

Modules:

- `fit`: linear, piecewise linear (breakpoints by exact least-squares search) and exponential growth fits,
  with the goodness-of-fit record of thesis Table 3.4; runs anywhere.
- `kernels/`: the microbenchmarks of thesis chapter 3 and section 4.4.5 (CUDA) and the measurement harness.
- `build`, `harness`, `analyze`, `profile_writer`: `kerncast calibrate` (build, run, fit, write a profile).
- `measure`, `stats`, `nvml`: `kerncast measure` (generated harness, repeat-until-stable timing, NVML power).

Running kernels needs an NVIDIA GPU and driver; without them the entry points raise `NoGpuError`, whose
message starts with "no NVIDIA GPU/driver found".
"""
