#pragma once
// A kernel defined in a header and launched from main.cu: its code, and so its line and its findings, are
// this file's; the stride it reads with is the value main.cu passes.

__global__ void strided_gather(const float *in, float *out, int n, int stride)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[i * stride];  // 🐢 stride 32: lanes 128 B apart
    }
}
