// Kerncast calibration harness: one operation per latency row of a GPU profile (names of data/isa.toml).
//
// Each Op emits its PTX instruction(s) through `asm volatile`, so neither the CUDA front end nor ptxas can fold,
// reorder or drop them; the destination is also a source, so consecutive steps of one chain are dependent
// (latency) while the chains of different ILP slots are independent (throughput, thesis section 3.2).
// `per_step` is the number of PTX instructions of the row's class one step executes.
#pragma once

#include <cuda_runtime.h>

namespace kc {

__device__ unsigned int g_atom_slots[32 * 4];

#define KC_SCALAR_OP(NAME, ROW, TYPE, CONSTRAINT, PER_STEP, SEED, OPERAND, ASM)            \
  struct NAME {                                                                             \
    using T = TYPE;                                                                         \
    using Operand = TYPE;                                                                   \
    static constexpr const char *row = ROW;                                                 \
    static constexpr int per_step = PER_STEP;                                               \
    static T seed() { return SEED; }                                                        \
    static Operand operand() { return OPERAND; }                                            \
    static __device__ __forceinline__ void step(T &x, Operand y, int slot) {                \
      (void)slot;                                                                           \
      asm volatile(ASM : "+" CONSTRAINT(x) : CONSTRAINT(y));                                \
    }                                                                                       \
    static __device__ __forceinline__ unsigned long long bits(const T &x) {                 \
      unsigned long long b = 0;                                                             \
      memcpy(&b, &x, sizeof(T));                                                            \
      return b;                                                                             \
    }                                                                                       \
  };

KC_SCALAR_OP(OpAddf, "addf", float, "f", 1, 1.0f, 1e-7f, "add.f32 %0, %0, %1;")
KC_SCALAR_OP(OpSubf, "subf", float, "f", 1, 1.0f, 1e-7f, "sub.f32 %0, %0, %1;")
KC_SCALAR_OP(OpMulf, "mulf", float, "f", 1, 1.0f, 1.0000001f, "mul.f32 %0, %0, %1;")
KC_SCALAR_OP(OpAdds, "adds", int, "r", 1, 1, 3, "add.s32 %0, %0, %1;")
KC_SCALAR_OP(OpSubs, "subs", int, "r", 1, 1, 3, "sub.s32 %0, %0, %1;")
KC_SCALAR_OP(OpMul, "mul", int, "r", 1, 7, 3, "mul.lo.s32 %0, %0, %1;")
KC_SCALAR_OP(OpAnd, "and", int, "r", 1, 0x5a5a5a5a, -1, "and.b32 %0, %0, %1;")
KC_SCALAR_OP(OpLogic, "logic", int, "r", 1, 0x5a5a5a5a, 0, "brev.b32 %0, %0; // %1")
KC_SCALAR_OP(OpFma, "fma", float, "f", 1, 0.25f, 0.5f, "fma.rn.f32 %0, %0, %1, %1;")
KC_SCALAR_OP(OpMads, "mads", int, "r", 1, 1, 1, "mad.lo.s32 %0, %0, %1, %1;")
KC_SCALAR_OP(OpDivf, "divf", float, "f", 1, 12345.0f, 1.0001f, "div.rn.f32 %0, %0, %1;")
KC_SCALAR_OP(OpDivs, "divs", int, "r", 1, 123456789, 1, "div.s32 %0, %0, %1;")
KC_SCALAR_OP(OpSqrt, "sqrt", float, "f", 1, 12345.0f, 0.0f, "sqrt.rn.f32 %0, %0; // %1")
KC_SCALAR_OP(OpSfu, "sfu", float, "f", 1, 0.5f, 0.0f, "sin.approx.f32 %0, %0; // %1")
KC_SCALAR_OP(OpMov, "mov", int, "r", 1, 17, 0, "mov.b32 %0, %0; // %1")
// int -> float -> int: two dependent conversions per step
KC_SCALAR_OP(OpCvt, "cvt", int, "r", 2, 1000, 0,
             "{ .reg .f32 t; cvt.rn.f32.s32 t, %0; cvt.rzi.s32.f32 %0, t; } // %1")
// compare then select on the predicate: setp and selp share the setp row
KC_SCALAR_OP(OpSetp, "setp", int, "r", 2, 5, 9,
             "{ .reg .pred p; setp.lt.s32 p, %0, %1; selp.s32 %0, %1, %0, p; }")
// every lane reads lane %1's value: a dependent chain through the shuffle network
KC_SCALAR_OP(OpShfl, "shfl", int, "r", 1, 3, 0, "shfl.sync.idx.b32 %0, %0, %1, 0x1f, 0xffffffff;")

#undef KC_SCALAR_OP

// Atomic add whose result feeds the next add; each lane and ILP slot has its own word (no contention).
struct OpAtom {
  using T = unsigned int;
  using Operand = unsigned int;
  static constexpr const char *row = "atom";
  static constexpr int per_step = 1;
  static T seed() { return 1u; }
  static Operand operand() { return 0u; }
  static __device__ __forceinline__ void step(T &x, Operand y, int slot) {
    (void)y;
    unsigned int *addr = g_atom_slots + (threadIdx.x & 31) + 32 * slot;
    asm volatile("atom.global.add.u32 %0, [%1], %0;" : "+r"(x) : "l"(addr) : "memory");
  }
  static __device__ __forceinline__ unsigned long long bits(const T &x) { return x; }
};

// Warp-wide barrier; only meaningful as a latency (one warp per block).
struct OpSync {
  using T = int;
  using Operand = int;
  static constexpr const char *row = "sync";
  static constexpr int per_step = 1;
  static T seed() { return 0; }
  static Operand operand() { return 0; }
  static __device__ __forceinline__ void step(T &x, Operand y, int slot) {
    (void)slot;
    asm volatile("bar.sync 0; // %0 %1" : "+r"(x) : "r"(y) : "memory");
  }
  static __device__ __forceinline__ unsigned long long bits(const T &x) { return static_cast<unsigned>(x); }
};

// Tensor core: m16n8k8 half-precision multiply with a float accumulator that feeds the next step.
struct MmaAcc {
  float c[4];
};

struct OpMma {
  using T = MmaAcc;
  using Operand = unsigned int;  // f16x2 bits used for every A and B register
  static constexpr const char *row = "mma";
  static constexpr int per_step = 1;
  static T seed() { return MmaAcc{{0.0f, 0.0f, 0.0f, 0.0f}}; }
  static Operand operand() { return 0x3c003c00u; }  // (1.0, 1.0) in f16
  static __device__ __forceinline__ void step(T &x, Operand y, int slot) {
    (void)slot;
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %4}, {%4}, "
        "{%0, %1, %2, %3};"
        : "+f"(x.c[0]), "+f"(x.c[1]), "+f"(x.c[2]), "+f"(x.c[3])
        : "r"(y));
  }
  static __device__ __forceinline__ unsigned long long bits(const T &x) {
    return __float_as_uint(x.c[0] + x.c[1] + x.c[2] + x.c[3]);
  }
};

}  // namespace kc
