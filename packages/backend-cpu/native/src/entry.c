/*
 * The exported entry points: one kernel per format and epilogue that the pool's threads call per workgroup of rows,
 * the instruction-set choice made once at load by cpuid/xgetbv, and the source hash the build embeds.
 */
#include <cpuid.h>
#include <stdint.h>
#include "poot_cpu.h"

#ifndef POOT_SOURCE_HASH
#define POOT_SOURCE_HASH "unbuilt"
#endif

static const poot_kernels *chosen;

static uint64_t xcr0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

/* AVX-512 F+BW+VL when the CPU and the OS (XCR0 opmask/ZMM state) allow it, else AVX2+F16C, else none. */
static const poot_kernels *choose(void) {
  uint32_t a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
  const int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
  if (!osxsave || !avx || !f16c) return 0;
  const uint64_t x = xcr0();
  if ((x & 6) != 6) return 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
  const int avx2 = (b >> 5) & 1, avx512f = (b >> 16) & 1, avx512bw = (b >> 30) & 1, avx512vl = (b >> 31) & 1;
  if (avx512f && avx512bw && avx512vl && (x & 0xe6) == 0xe6) return &poot_kernels_avx512;
  return avx2 ? &poot_kernels_avx2 : 0;
}

/** The kernel set this CPU runs ("avx512", "avx2"), or "none" (the caller then keeps the Wasm kernels). */
const char *poot_native_isa(void) {
  if (!chosen) chosen = choose();
  return chosen ? chosen->isa : "none";
}

/** Forces a kernel set by name ("avx2", "avx512"); returns 1 when it is usable here (tests run both). */
int poot_native_force(const char *isa) {
  const poot_kernels *want = isa[0] == 'a' && isa[3] == '5' ? &poot_kernels_avx512 : &poot_kernels_avx2;
  const poot_kernels *best = choose();
  if (!best || (want == &poot_kernels_avx512 && best != want)) return 0;
  chosen = want;
  return 1;
}

/** The sha256 of the C sources this object was built from (the stale-object test compares it). */
const char *poot_native_source_hash(void) { return POOT_SOURCE_HASH; }

/** The address of a buffer (the shared memory's base: it never moves, decision 0952). */
uint64_t poot_native_addr(const void *p) { return (uint64_t)(uintptr_t)p; }

/*
 * Runs workgroup `group` of a GEMV phase of format `fmt` and epilogue `epi`. `args` is the byte offset of the
 * thread's argument block in the memory at `base`: `nbuf` buffer offsets, then M, N, K and rows per workgroup (the
 * layout of the kernels codegen's x86 target generates, decision 2300: both libraries take the same arguments).
 */
static void gemv_group(uint64_t base, uint32_t args, uint32_t group, uint32_t nbuf, uint32_t fmt, uint32_t epi) {
  uint8_t *mem = (uint8_t *)(uintptr_t)base;
  const uint32_t *a = (const uint32_t *)(mem + args);
  const uint32_t M = a[nbuf], N = a[nbuf + 1], K = a[nbuf + 2], R = a[nbuf + 3];
  const uint32_t n0 = group * R, n1 = n0 + R < N ? n0 + R : N;
  if (n0 >= N) return;
  const float *x = (const float *)(mem + a[0]);
  if (!chosen) chosen = choose();
  if (epi == POOT_EPI_HEADS2) {
    float *y = (float *)(mem + a[3]);
    chosen->gemv(mem + a[1], fmt, x, y, 0, M, N, K, n0, n1);
    chosen->gemv(mem + a[2], fmt, x, y + (uint64_t)M * N, 0, M, N, K, n0, n1);
    return;
  }
  const float *r = epi == POOT_EPI_ADD ? (const float *)(mem + a[2]) : 0;
  float *y = (float *)(mem + a[epi == POOT_EPI_ADD ? 3 : 2]);
  chosen->gemv(mem + a[1], fmt, x, y, r, M, N, K, n0, n1);
}

/* One exported kernel per format and epilogue, named as the generated library names them. */
#define KERNELS_OF(NAME, FMT)                                                                                         \
  void poot_gemv_##NAME##_none(uint64_t b, uint32_t a, uint32_t g) { gemv_group(b, a, g, 3, FMT, POOT_EPI_NONE); }   \
  void poot_gemv_##NAME##_add(uint64_t b, uint32_t a, uint32_t g) { gemv_group(b, a, g, 4, FMT, POOT_EPI_ADD); }     \
  void poot_gemv_##NAME##_heads2(uint64_t b, uint32_t a, uint32_t g) { gemv_group(b, a, g, 4, FMT, POOT_EPI_HEADS2); }
KERNELS_OF(f32, POOT_F32)
KERNELS_OF(f16, POOT_F16)
KERNELS_OF(bf16, POOT_BF16)
KERNELS_OF(q8_0, POOT_Q8_0)
KERNELS_OF(q4_k, POOT_Q4_K)
KERNELS_OF(q6_k, POOT_Q6_K)

#define NAMES_OF(NAME) "poot_gemv_" #NAME "_none,poot_gemv_" #NAME "_add,poot_gemv_" #NAME "_heads2"

/** The kernels this object defines, comma-separated. */
const char *poot_native_kernels(void) {
  return NAMES_OF(f32) "," NAMES_OF(f16) "," NAMES_OF(bf16) "," NAMES_OF(q8_0) "," NAMES_OF(q4_k) "," NAMES_OF(q6_k);
}
