// Kerncast calibration harness: one operation per latency row of a GPU profile (names of data/isa.toml).
//
// Each Op emits its PTX instruction(s) through `asm volatile`, so the CUDA front end cannot fold, reorder or
// drop them; the destination is also a source, so consecutive steps of one chain are dependent (latency) while
// the chains of different ILP slots are independent (throughput, thesis section 3.2). `per_step` is the number
// of PTX instructions of the row's class one step executes.
//
// ptxas still optimises the PTX it is given, and folds chains whose steps it can see through: `and` twice with
// one mask is one `and`, `x + y + y` is one `x + 2y`, a `mov` is renamed away and a shuffle of a value every
// lane already holds is dropped. Each instruction is therefore guarded by a predicate that is true at run time
// but comes from a kernel parameter ptxas cannot know (`guard`, 1): a guarded step may or may not happen, so
// no two steps can be merged and every one stays one SASS instruction of the row's class. The SASS checks in
// the test suite (tests/test_calibration_sass.py) hold every kernel to this, instruction by instruction.
#pragma once

#include <cuda_runtime.h>

#include <type_traits>

namespace kc {

__device__ unsigned int g_atom_slots[32 * 4];

// A seed that differs between the lanes of a warp: a chain whose values ptxas can prove warp-uniform may be
// moved to the uniform datapath (USEL, ULOP3...) or, for a shuffle, dropped; the low bit of the thread index
// keeps integer chains on the per-thread pipes the row is about. Floating-point chains have no uniform pipe.
template <typename T>
__device__ __forceinline__ T lane_seed(T seed) {
  if constexpr (std::is_integral_v<T>) {
    return seed + static_cast<T>(threadIdx.x & 1u);
  } else {
    return seed;
  }
}

// Opens a PTX scope with predicate `g` = (guard operand != 0); `G` is the operand number of the guard.
#define KC_GUARD_SCOPE(G) "{ .reg .pred g; setp.ne.s32 g, %" #G ", 0; "

#define KC_SCALAR_OP(NAME, ROW, TYPE, CONSTRAINT, PER_STEP, SEED, OPERAND, ASM)            \
  struct NAME {                                                                             \
    using T = TYPE;                                                                         \
    using Operand = TYPE;                                                                   \
    static constexpr const char *row = ROW;                                                 \
    static constexpr int per_step = PER_STEP;                                               \
    static T seed() { return SEED; }                                                        \
    static Operand operand() { return OPERAND; }                                            \
    static __device__ __forceinline__ T start(T seed) { return lane_seed(seed); }           \
    static __device__ __forceinline__ Operand prepare(Operand y) { return y; }             \
    static __device__ __forceinline__ void step(T &x, Operand y, int guard, int slot) {     \
      (void)slot;                                                                           \
      asm volatile(KC_GUARD_SCOPE(2) ASM " }" : "+" CONSTRAINT(x) : CONSTRAINT(y), "r"(guard)); \
    }                                                                                       \
    static __device__ __forceinline__ unsigned long long bits(const T &x) {                 \
      unsigned long long b = 0;                                                             \
      memcpy(&b, &x, sizeof(T));                                                            \
      return b;                                                                             \
    }                                                                                       \
  };

KC_SCALAR_OP(OpAddf, "addf", float, "f", 1, 1.0f, 1e-7f, "@g add.f32 %0, %0, %1;")
KC_SCALAR_OP(OpSubf, "subf", float, "f", 1, 1.0f, 1e-7f, "@g sub.f32 %0, %0, %1;")
KC_SCALAR_OP(OpMulf, "mulf", float, "f", 1, 1.0f, 1.0000001f, "@g mul.f32 %0, %0, %1;")
KC_SCALAR_OP(OpAdds, "adds", int, "r", 1, 1, 3, "@g add.s32 %0, %0, %1;")
KC_SCALAR_OP(OpSubs, "subs", int, "r", 1, 1, 3, "@g sub.s32 %0, %0, %1;")
KC_SCALAR_OP(OpMul, "mul", int, "r", 1, 7, 3, "@g mul.lo.s32 %0, %0, %1;")
KC_SCALAR_OP(OpAnd, "and", int, "r", 1, 0x5a5a5a5a, -1, "@g and.b32 %0, %0, %1;")
KC_SCALAR_OP(OpLogic, "logic", int, "r", 1, 0x5a5a5a5a, 0, "brev.b32 %0, %0;")
KC_SCALAR_OP(OpFma, "fma", float, "f", 1, 0.25f, 0.5f, "@g fma.rn.f32 %0, %0, %1, %1;")
KC_SCALAR_OP(OpMads, "mads", int, "r", 1, 1, 1, "@g mad.lo.s32 %0, %0, %1, %1;")

// Divisions: the chain value is the divisor (x = c / x alternates between two values), as a division by an
// invariant divisor would let ptxas compute the divisor's reciprocal once for the whole loop
KC_SCALAR_OP(OpDivf, "divf", float, "f", 1, 1.0001f, 12345.0f, "div.rn.f32 %0, %1, %0;")
KC_SCALAR_OP(OpDivs, "divs", int, "r", 1, 1000, 123456789, "div.s32 %0, %1, %0;")
KC_SCALAR_OP(OpSqrt, "sqrt", float, "f", 1, 12345.0f, 0.0f, "sqrt.rn.f32 %0, %0;")
KC_SCALAR_OP(OpSfu, "sfu", float, "f", 1, 0.5f, 0.0f, "sin.approx.f32 %0, %0;")
// int -> float -> int: two dependent conversions per step
KC_SCALAR_OP(OpCvt, "cvt", int, "r", 2, 1000, 0,
             ".reg .f32 t; cvt.rn.f32.s32 t, %0; cvt.rzi.s32.f32 %0, t;")
// compare then select on the predicate (setp and selp share the setp row); the selected value is the guard, not
// the compared operand, so the pair is no min/max that ptxas could merge with the next step's
KC_SCALAR_OP(OpSetp, "setp", int, "r", 2, 5, 9,
             ".reg .pred p; setp.lt.s32 p, %0, %1; selp.s32 %0, %2, %0, p;")

#undef KC_SCALAR_OP

// Register move: a `mov` from a register that stays live into the chain's other register, both guarded, so
// that ptxas can neither rename it away nor see that the two registers already agree (it becomes one SASS
// SEL or MOV per move). One step moves b -> a and a -> b: two dependent moves.
struct MovPair {
  unsigned int a, b;
};

struct OpMov {
  using T = MovPair;
  using Operand = unsigned int;
  static constexpr const char *row = "mov";
  static constexpr int per_step = 2;
  static T seed() { return MovPair{17u, 19u}; }
  static Operand operand() { return 0u; }
  static __device__ __forceinline__ T start(T seed) { return MovPair{lane_seed(seed.a), lane_seed(seed.b)}; }
  static __device__ __forceinline__ Operand prepare(Operand y) { return y; }
  static __device__ __forceinline__ void step(T &x, Operand y, int guard, int slot) {
    (void)y;
    (void)slot;
    asm volatile(KC_GUARD_SCOPE(2) "@g mov.b32 %0, %1; }" : "+r"(x.a) : "r"(x.b), "r"(guard));
    asm volatile(KC_GUARD_SCOPE(2) "@g mov.b32 %0, %1; }" : "+r"(x.b) : "r"(x.a), "r"(guard));
  }
  static __device__ __forceinline__ unsigned long long bits(const T &x) { return x.a ^ x.b; }
};

// Shuffle: every lane reads the value of lane (lane + operand) mod 32, a rotation of the warp's values that
// ptxas cannot undo (the lanes hold different values and the distance is a kernel parameter, 1), so each step
// is a real exchange through the shuffle network that depends on the previous one.
struct OpShfl {
  using T = unsigned int;
  using Operand = unsigned int;
  static constexpr const char *row = "shfl";
  static constexpr int per_step = 1;
  static T seed() { return 3u; }
  static Operand operand() { return 1u; }
  static __device__ __forceinline__ T start(T seed) { return seed + threadIdx.x; }
  // the source lane of this thread, computed once before the timed loop
  static __device__ __forceinline__ Operand prepare(Operand y) { return (threadIdx.x + y) & 31u; }
  static __device__ __forceinline__ void step(T &x, Operand y, int guard, int slot) {
    (void)guard;
    (void)slot;
    asm volatile("shfl.sync.idx.b32 %0, %0, %1, 0x1f, 0xffffffff;" : "+r"(x) : "r"(y));
  }
  static __device__ __forceinline__ unsigned long long bits(const T &x) { return x; }
};

// Atomic add whose result feeds the next add; each lane and ILP slot has its own word (no contention).
struct OpAtom {
  using T = unsigned int;
  using Operand = unsigned int;
  static constexpr const char *row = "atom";
  static constexpr int per_step = 1;
  static T seed() { return 1u; }
  static Operand operand() { return 0u; }
  static __device__ __forceinline__ T start(T seed) { return seed; }
  static __device__ __forceinline__ Operand prepare(Operand y) { return y; }
  static __device__ __forceinline__ void step(T &x, Operand y, int guard, int slot) {
    (void)y;
    (void)guard;
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
  static __device__ __forceinline__ T start(T seed) { return seed; }
  static __device__ __forceinline__ Operand prepare(Operand y) { return y; }
  static __device__ __forceinline__ void step(T &x, Operand y, int guard, int slot) {
    (void)guard;
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
  static __device__ __forceinline__ T start(T seed) { return seed; }
  static __device__ __forceinline__ Operand prepare(Operand y) { return y; }
  static __device__ __forceinline__ void step(T &x, Operand y, int guard, int slot) {
    (void)guard;
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
