"""Coverage kernels of the GPU campaign (`benchmarks/gpu_campaign.py`), generated into benchmarks/data/coverage/.

The project's own kernels (examples, tests/kernels, the ladders) are mostly memory-bound FP32 code; a profile
and a power model checked only on them say nothing about FP64, the special-function unit, tensor cores,
atomics, local memory, divergence, bank conflicts, strides or grid shapes. Each class below is one .cu file of
small kernels that vary one thing (ILP, stride, contention, conflict degree, ...), all with one signature,

    __global__ void NAME(const float *__restrict__ in, float *__restrict__ out, int n, int iters)

so that the measurement harness can launch every one the same way (`n` elements, `iters` loop trips; every
pointer gets `buffer_bytes`). Indices are computed from the thread index, never read from the buffers (which
hold ones), so no launch reads out of bounds. The files are committed; `python benchmarks/campaign_kernels.py`
writes them again and a test checks that the committed ones are what it writes.

    python benchmarks/campaign_kernels.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "benchmarks" / "data" / "coverage"
SIGNATURE = "(const float *__restrict__ in, float *__restrict__ out, int n, int iters)"
HEAD = "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i >= n) return;\n"


@dataclass(frozen=True)
class CoverageKernel:
    """One generated kernel: its class, name, body, loop trips and the elements per thread its buffers need."""

    klass: str
    name: str
    body: str
    iters: int = 1
    #: elements (of up to 8 bytes) per thread the largest buffer access reaches: sizes every buffer
    span: int = 1
    #: the minimum compute capability (tensor-core shapes), as major * 10 + minor
    min_cc: int = 0

    def source(self) -> str:
        return f"__global__ void {self.name}{SIGNATURE}\n{{\n{HEAD}{self.body}}}\n"


def _fp64() -> list[CoverageKernel]:
    out = []
    for ilp in (1, 2, 4, 8):
        decl = "\n".join(f"    double a{k} = in[i] + {k}.0;" for k in range(ilp)) + "\n"
        step = "".join(f"        a{k} = fma(a{k}, 0.999, 0.001);\n" for k in range(ilp))
        total = " + ".join(f"a{k}" for k in range(ilp))
        out.append(CoverageKernel("fp64", f"dfmaIlp{ilp}", decl + "    for (int k = 0; k < iters; ++k) {\n" + step
                                  + f"    }}\n    out[i] = (float)({total});\n", iters=256))
    for name, op in (("daddChain", "a = a + 1e-9"), ("dmulChain", "a = a * 0.9999999"),
                     ("ddivChain", "a = 1.0001 / a"), ("dsqrtChain", "a = sqrt(a + 1.0)")):
        out.append(CoverageKernel("fp64", name, "    double a = in[i] + 1.0;\n    for (int k = 0; k < iters; ++k) "
                                  f"{{ {op}; }}\n    out[i] = (float)a;\n", iters=128))
    return out


def _sfu() -> list[CoverageKernel]:
    ops = {"sinFast": "a = __sinf(a)", "cosFast": "a = __cosf(a)", "expFast": "a = __expf(-a)",
           "logFast": "a = __logf(a + 2.0f)", "rsqrtChain": "a = rsqrtf(a + 1.0f)", "sqrtChain": "a = sqrtf(a + 1.0f)",
           "divFast": "a = __fdividef(1.0f, a + 1.0f)", "exp2Chain": "a = exp2f(-a)", "sinPrecise": "a = sinf(a)",
           "tanhChain": "a = tanhf(a)"}
    return [CoverageKernel("sfu", name, f"    float a = in[i];\n    for (int k = 0; k < iters; ++k) {{ {op}; }}\n"
                           "    out[i] = a;\n", iters=256) for name, op in ops.items()]


def _fp32_int() -> list[CoverageKernel]:
    out = []
    for ilp in (1, 2, 4, 8):
        decl = "\n".join(f"    float a{k} = in[i] + {k}.0f;" for k in range(ilp)) + "\n"
        step = "".join(f"        a{k} = fmaf(a{k}, 0.999f, 0.001f);\n" for k in range(ilp))
        out.append(CoverageKernel("fp32 / int", f"ffmaIlp{ilp}", decl + "    for (int k = 0; k < iters; ++k) {\n"
                                  + step + "    }\n    out[i] = " + " + ".join(f"a{k}" for k in range(ilp)) + ";\n",
                                  iters=512))
    ints = {"imadChain": "x = x * 3u + 7u", "iaddChain": "x = x + (x >> 3) + 1u",
            "shiftXor": "x ^= (x << 13) ^ (x >> 7)", "popcChain": "x = x + __popc(x)",
            "clzChain": "x = x + __clz(x) + 1u", "bfeChain": "x = x + ((x >> 5) & 255u)",
            "umulHi": "x = __umulhi(x, 2654435761u) + x"}
    for name, op in ints.items():
        out.append(CoverageKernel("fp32 / int", name, "    unsigned int x = i + 1u;\n    for (int k = 0; k < iters; "
                                  f"++k) {{ {op}; }}\n    out[i] = (float)x;\n", iters=512))
    return out


_MMA = {
    "mmaF16": (80, "unsigned int a[4] = {0x3c003c00u, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u}, b[2] = {0x3c003c00u, "
               "0x3c003c00u};\n    float c[4] = {0.f, 0.f, 0.f, 0.f};\n",
               "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};",
               ': "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), '
               '"r"(b[0]), "r"(b[1])', "c[0] + c[1] + c[2] + c[3]"),
    "mmaBf16": (80, "unsigned int a[4] = {0x3f803f80u, 0x3f803f80u, 0x3f803f80u, 0x3f803f80u}, b[2] = {0x3f803f80u, "
                "0x3f803f80u};\n    float c[4] = {0.f, 0.f, 0.f, 0.f};\n",
                "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                "{%0,%1,%2,%3};",
                ': "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), '
                '"r"(b[0]), "r"(b[1])', "c[0] + c[1] + c[2] + c[3]"),
    "mmaTf32": (80, "unsigned int a[4] = {0x3f800000u, 0x3f800000u, 0x3f800000u, 0x3f800000u}, b[2] = {0x3f800000u, "
                "0x3f800000u};\n    float c[4] = {0.f, 0.f, 0.f, 0.f};\n",
                "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                "{%0,%1,%2,%3};",
                ': "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), '
                '"r"(b[0]), "r"(b[1])', "c[0] + c[1] + c[2] + c[3]"),
    "mmaS8": (80, "unsigned int a[4] = {0x01010101u, 0x01010101u, 0x01010101u, 0x01010101u}, b[2] = {0x01010101u, "
              "0x01010101u};\n    int c[4] = {0, 0, 0, 0};\n",
              "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};",
              ': "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), '
              '"r"(b[0]), "r"(b[1])', "(float)(c[0] + c[1] + c[2] + c[3])"),
    "mmaF64": (80, "double a = 1.0, b = 1.0;\n    double c[2] = {0.0, 0.0};\n",
               "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};",
               ': "+d"(c[0]), "+d"(c[1]) : "d"(a), "d"(b)', "(float)(c[0] + c[1])"),
}


def _half_intdiv() -> list[CoverageKernel]:
    out = []
    for ilp in (1, 4):
        decl = "\n".join(f"    __half2 h{k} = __floats2half2_rn(in[i], {k}.0f);" for k in range(ilp)) + "\n"
        decl += "    const __half2 m = __floats2half2_rn(0.999f, 0.999f), c = __floats2half2_rn(0.001f, 0.001f);\n"
        step = "".join(f"        h{k} = __hfma2(h{k}, m, c);\n" for k in range(ilp))
        total = " + ".join(f"__low2float(h{k})" for k in range(ilp))
        out.append(CoverageKernel("fp16 / int division", f"hfma2Ilp{ilp}", decl + "    for (int k = 0; k < iters; ++k)"
                                  " {\n" + step + f"    }}\n    out[i] = {total};\n", iters=512))
    out.append(CoverageKernel("fp16 / int division", "hadd2Chain",
                              "    __half2 h = __floats2half2_rn(in[i], 1.0f);\n"
                              "    const __half2 d = __floats2half2_rn(0.001f, 0.001f);\n"
                              "    for (int k = 0; k < iters; ++k) h = __hadd2(h, d);\n    out[i] = __low2float(h);\n",
                              iters=512))
    for name, op in (("idivChain", "x = 1000000007u / (x % 1000u + 1u) + x"),
                     ("imodChain", "x = (x * 31u + 17u) % 1000003u")):
        out.append(CoverageKernel("fp16 / int division", name, "    unsigned int x = i + 1u;\n"
                                  f"    for (int k = 0; k < iters; ++k) {{ {op}; }}\n    out[i] = (float)x;\n",
                                  iters=128))
    return out


def _tensor() -> list[CoverageKernel]:
    out = []
    for name, (cc, decl, asm, operands, result) in _MMA.items():
        body = (f"    {decl}    for (int k = 0; k < iters; ++k) {{\n        asm volatile(\"{asm}\"\n"
                f"                     {operands});\n    }}\n    out[i] = {result};\n")
        out.append(CoverageKernel("tensor cores", name, body, iters=256, min_cc=cc))
    return out


def _atomics() -> list[CoverageKernel]:
    counters = "    unsigned int *cnt = reinterpret_cast<unsigned int *>(out);\n"  # declared where an op uses it
    ops = {
        "atomicOneAddress": "atomicAdd(cnt, 1u)",
        "atomicPerWarp": "atomicAdd(cnt + (i >> 5), 1u)",
        "atomicPerThread": "atomicAdd(cnt + i, 1u)",
        "atomicFloatPerWarp": "atomicAdd(out + (i >> 5), 1.0f)",
        "atomicMaxPerWarp": "atomicMax(cnt + (i >> 5), (unsigned int)(i + k))",
        "atomicCasPerThread": "atomicCAS(cnt + i, (unsigned int)k, (unsigned int)(k + 1))",
    }
    out = [CoverageKernel("atomics", name, (counters if "cnt" in op else "")
                          + f"    for (int k = 0; k < iters; ++k) {{ {op}; }}\n",
                          iters=16) for name, op in ops.items()]
    for name, index in (("sharedAtomicOne", "0"), ("sharedAtomicPerLane", "threadIdx.x & 31"),
                        ("sharedAtomicPerThread", "threadIdx.x")):
        out.append(CoverageKernel("atomics", name, "    __shared__ unsigned int s[1024];\n    s[threadIdx.x] = 0u;\n"
                                  "    __syncthreads();\n    for (int k = 0; k < iters; ++k) { atomicAdd(&s[" + index
                                  + "], 1u); }\n    __syncthreads();\n    out[i] = (float)s[threadIdx.x];\n",
                                  iters=64))
    return out


def _local() -> list[CoverageKernel]:
    out = []
    for size in (8, 32, 128, 512):
        out.append(CoverageKernel("local memory", f"localArray{size}",
                                  f"    float t[{size}];\n    for (int k = 0; k < {size}; ++k) t[k] = in[i] + k;\n"
                                  "    float a = 0.0f;\n    for (int k = 0; k < iters; ++k) "
                                  f"a += t[(i * 7 + k * 13) % {size}];\n    out[i] = a;\n", iters=64))
    return out


def _divergent() -> list[CoverageKernel]:
    out = []
    for ways in (2, 4, 8, 16, 32):
        cases = "".join(f"            case {c}: a = a * 1.0001f + {c}.0f; break;\n" for c in range(min(ways, 8)))
        out.append(CoverageKernel("divergent", f"divergeLane{ways}",
                                  "    float a = in[i];\n    for (int k = 0; k < iters; ++k) {\n"
                                  f"        switch ((threadIdx.x % {ways}) % 8) {{\n{cases}        }}\n"
                                  "    }\n    out[i] = a;\n", iters=64))
    out.append(CoverageKernel("divergent", "laneTripCount",
                              "    float a = in[i];\n"
                              "    for (int k = 0; k < iters * ((threadIdx.x & 31) + 1) / 32; ++k)"
                              " a = a * 1.0001f + 1.0f;\n    out[i] = a;\n", iters=256))
    out.append(CoverageKernel("divergent", "halfWarpEarlyExit",
                              "    if ((threadIdx.x & 31) >= 16) { out[i] = 0.0f; return; }\n    float a = in[i];\n"
                              "    for (int k = 0; k < iters; ++k) a = a * 1.0001f + 1.0f;\n    out[i] = a;\n",
                              iters=256))
    return out


def _shared() -> list[CoverageKernel]:
    out = []
    for stride in (1, 2, 4, 8, 16, 32):
        out.append(CoverageKernel("shared memory", f"sharedLoadStride{stride}",
                                  "    __shared__ float s[32 * 33];\n    for (int k = threadIdx.x; k < 32 * 33; k += "
                                  "blockDim.x) s[k] = (float)k;\n    __syncthreads();\n    float a = 0.0f;\n"
                                  "    const int lane = threadIdx.x & 31;\n    for (int k = 0; k < iters; ++k) "
                                  f"a += s[(lane * {stride} + k) % (32 * 33)];\n    out[i] = a;\n", iters=256))
    for stride in (1, 2, 32):
        out.append(CoverageKernel("shared memory", f"sharedStoreStride{stride}",
                                  "    __shared__ float s[32 * 33];\n    const int lane = threadIdx.x & 31;\n"
                                  "    for (int k = 0; k < iters; ++k) "
                                  f"s[(lane * {stride} + k) % (32 * 33)] = (float)k;\n    __syncthreads();\n"
                                  "    out[i] = s[threadIdx.x % (32 * 33)];\n", iters=256))
    out.append(CoverageKernel("shared memory", "sharedBroadcast",
                              "    __shared__ float s[32];\n    if (threadIdx.x < 32) s[threadIdx.x] = 1.0f;\n"
                              "    __syncthreads();\n    float a = 0.0f;\n    for (int k = 0; k < iters; ++k) "
                              "a += s[k & 31];\n    out[i] = a;\n", iters=256))
    return out


def _streaming() -> list[CoverageKernel]:
    return [
        CoverageKernel("streaming", "copyF32", "    out[i] = in[i];\n"),
        CoverageKernel("streaming", "copyF64", "    reinterpret_cast<double *>(out)[i] = "
                       "reinterpret_cast<const double *>(in)[i];\n"),
        CoverageKernel("streaming", "copyF32x2", "    reinterpret_cast<float2 *>(out)[i] = "
                       "reinterpret_cast<const float2 *>(in)[i];\n"),
        CoverageKernel("streaming", "copyF32x4", "    reinterpret_cast<float4 *>(out)[i] = "
                       "reinterpret_cast<const float4 *>(in)[i];\n", span=2),
        CoverageKernel("streaming", "readOnlySum",
                       "    float a = __ldg(in + i);\n    if (a == 12345.0f) out[i] = a;\n"),
        CoverageKernel("streaming", "writeOnly", "    out[i] = (float)i;\n"),
        CoverageKernel("streaming", "scaleInPlace", "    out[i] = out[i] * 2.0f;\n"),
        CoverageKernel("streaming", "triad", "    out[i] = in[i] + 3.0f * out[i];\n"),
        CoverageKernel("streaming", "triadF64", "    double *o = reinterpret_cast<double *>(out);\n"
                       "    o[i] = reinterpret_cast<const double *>(in)[i] + 3.0 * o[i];\n"),
        CoverageKernel("streaming", "copyU16", "    reinterpret_cast<unsigned short *>(out)[i] = "
                       "reinterpret_cast<const unsigned short *>(in)[i];\n"),
        CoverageKernel("streaming", "gridStrideCopy", "    for (int k = i; k < n * iters; k += gridDim.x * blockDim.x)"
                       " out[k % n] = in[k % n];\n", iters=4),
    ]


def _strided() -> list[CoverageKernel]:
    out = [CoverageKernel("strided", f"loadStride{s}", f"    out[i] = in[(long long)i * {s}];\n", span=s)
           for s in (2, 3, 4, 8, 16, 32, 64)]
    out += [CoverageKernel("strided", f"storeStride{s}", f"    out[(long long)i * {s}] = in[i];\n", span=s)
            for s in (2, 8, 32)]
    out.append(CoverageKernel("strided", "gatherHashed", "    const unsigned int j = (i * 2654435761u) % n;\n"
                              "    out[i] = in[j];\n"))
    out.append(CoverageKernel("strided", "scatterHashed", "    const unsigned int j = (i * 2654435761u) % n;\n"
                              "    out[j] = in[i];\n"))
    out.append(CoverageKernel("strided", "columnWalk", "    const int rows = 1024;\n"
                              "    const int r = i % rows, c = i / rows;\n"
                              "    out[i] = in[(long long)r * (n / rows) + c];\n"))
    return out


def _sync_cache() -> list[CoverageKernel]:
    return [
        CoverageKernel("sync / warp", "syncLoop", "    __shared__ float s[1024];\n    float a = in[i];\n"
                       "    for (int k = 0; k < iters; ++k) {\n        s[threadIdx.x] = a;\n        __syncthreads();\n"
                       "        a += s[(threadIdx.x + 1) % blockDim.x];\n        __syncthreads();\n    }\n"
                       "    out[i] = a;\n", iters=64),
        CoverageKernel("sync / warp", "shuffleReduce", "    float a = in[i];\n    for (int k = 0; k < iters; ++k)\n"
                       "        for (int d = 16; d > 0; d /= 2) a += __shfl_xor_sync(0xffffffffu, a, d);\n"
                       "    out[i] = a;\n", iters=32),
        CoverageKernel("sync / warp", "ballotCount", "    unsigned int c = 0;\n    for (int k = 0; k < iters; ++k)\n"
                       "        c += __popc(__ballot_sync(0xffffffffu, ((i + k) & 3) == 0));\n    out[i] = (float)c;\n",
                       iters=64),
        CoverageKernel("cache", "l2Reread", "    float a = 0.0f;\n    for (int k = 0; k < iters; ++k) "
                       "a += in[(i + k * 4096) % 65536];\n    out[i] = a;\n", iters=64, span=1),
        CoverageKernel("cache", "l1Reread", "    float a = 0.0f;\n    for (int k = 0; k < iters; ++k) "
                       "a += in[(threadIdx.x + k) % 1024];\n    out[i] = a;\n", iters=64),
    ]


GENERATORS = {"fp64": _fp64, "sfu": _sfu, "fp32_int": _fp32_int, "half_intdiv": _half_intdiv, "tensor": _tensor,
              "atomics": _atomics, "local": _local, "divergent": _divergent, "shared": _shared, "streaming": _streaming,
              "strided": _strided, "sync_cache": _sync_cache}


def coverage_kernels() -> dict[str, list[CoverageKernel]]:
    """File stem -> its kernels, in a fixed order."""
    return {stem: make() for stem, make in GENERATORS.items()}


def file_text(stem: str, kernels: list[CoverageKernel]) -> str:
    """The .cu file of one class."""
    head = (f"// Kerncast GPU campaign: coverage kernels of class '{kernels[0].klass}', generated by "
            "benchmarks/campaign_kernels.py (do not edit; run it again).\n"
            "// Signature of every kernel: (in, out, n elements, iters loop trips); indices come from the thread "
            "index only.\n#include <cuda_fp16.h>\n#include <cuda_runtime.h>\n\n")
    return head + "\n".join(k.source() for k in kernels)


def write_all(out_dir: Path = OUT_DIR) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, kernels in coverage_kernels().items():
        path = out_dir / f"{stem}.cu"
        path.write_text(file_text(stem, kernels), encoding="utf-8")
        written.append(path)
    return written


def stale(out_dir: Path = OUT_DIR) -> list[str]:
    """The class files that differ from what the generator writes (empty when up to date)."""
    return [stem for stem, kernels in coverage_kernels().items()
            if not (out_dir / f"{stem}.cu").is_file()
            or (out_dir / f"{stem}.cu").read_text(encoding="utf-8") != file_text(stem, kernels)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only report whether the committed files are current")
    args = ap.parse_args(argv)
    if args.check:
        bad = stale()
        print("stale: " + ", ".join(bad) if bad else "coverage kernels are current")
        return 1 if bad else 0
    for path in write_all():
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
