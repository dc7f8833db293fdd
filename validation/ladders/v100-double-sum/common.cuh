// Shared pieces of the double-precision sum ladder (V100): warp-level finishing steps.
#pragma once

// The last six steps of a shared-memory tree, one warp, no barriers (the array is volatile).
__device__ __forceinline__ void tail_volatile(volatile double *s, int t)
{
    s[t] += s[t + 32];
    s[t] += s[t + 16];
    s[t] += s[t + 8];
    s[t] += s[t + 4];
    s[t] += s[t + 2];
    s[t] += s[t + 1];
}

// A warp's sum by five shuffle-down steps; lane 0 ends with the total.
__device__ __forceinline__ double warp_sum(double v)
{
    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}
