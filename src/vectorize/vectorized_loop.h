// DTRAIN_VECTORIZED_LOOP before a function with a hot element loop compiles it once per
// instruction set (AVX-512, AVX2 with FMA, the baseline), the one to run chosen when the
// program loads, and with GCC's dynamic cost model: -O2's own vectorizes only loops that need
// no epilogue, and the baseline build knows no AVX. Every copy rounds as the scalar loop does:
// no a * b + c is contracted into a fused multiply-add (write std::fma where one is meant), so
// results are the same bits whichever copy runs. Pointers the loop reads and writes should be
// __restrict, or GCC adds run-time overlap checks.
//
// The copies need GCC 12 (the x86-64-v3 level) and ifunc (ELF, glibc). Other GCC builds get
// the contraction rule alone; clang (the fuzzing and ThreadSanitizer builds) gets nothing,
// and contracts only where FMA is enabled, which those builds' generic x86-64 target is not.
#pragma once

#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define DTRAIN_VECTORIZED_LOOP                                          \
  __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default"), \
                 optimize("vect-cost-model=dynamic", "fp-contract=off")))
#elif defined(__GNUC__) && !defined(__clang__)
#define DTRAIN_VECTORIZED_LOOP __attribute__((optimize("fp-contract=off")))
#else
#define DTRAIN_VECTORIZED_LOOP
#endif
