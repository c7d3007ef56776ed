/*
 * poot's native CPU decode kernels (decision 0952): GEMVs over the CPU executor's shared WebAssembly.Memory, called
 * through koffi from every thread of the pool. Numerics as the Wasm kernels (decision 0951): activations f32, each
 * weight decoded and rounded as the reference decoder does, each product rounded in f32, no FMA; only the summation
 * order is the kernel's. Built with -ffp-contract=off by ../build.mjs; never needs a compiler on a user's machine.
 */
#ifndef POOT_CPU_H
#define POOT_CPU_H
#include <stdint.h>

/* Weight formats (the `fmt` argument word). */
enum { POOT_F32 = 1, POOT_F16 = 2, POOT_BF16 = 3, POOT_Q8_0 = 8, POOT_Q4_K = 12, POOT_Q6_K = 14 };
/* Epilogues (the `epi` argument word): buffers are [x, W, y], [x, W, r, y] (y = acc + r) or [x, W0, W1, y] (y = [2][M][N]). */
enum { POOT_EPI_NONE = 0, POOT_EPI_ADD = 1, POOT_EPI_HEADS2 = 2 };

/* One kernel set (one instruction set). Rows [n0, n1) of y[m][n] = sum_k W[n][k] * x[m][k] (+ r[m][n]). */
typedef struct {
  const char *isa;
  void (*gemv)(const uint8_t *w, uint32_t fmt, const float *x, float *y, const float *r, uint32_t M, uint32_t N, uint32_t K, uint32_t n0, uint32_t n1);
} poot_kernels;

extern const poot_kernels poot_kernels_avx2;
extern const poot_kernels poot_kernels_avx512;

#endif
