/*
 * The GEMV kernels of one instruction set: this file is compiled twice by ../build.mjs, with AVX2+F16C (8 lanes) and
 * with AVX-512 F/BW/VL (16 lanes). Every weight is decoded exactly as @poot/models' recipe rounds it, every product
 * w*x is one f32 multiply (-ffp-contract=off: no FMA), and only the order of the sum is this file's (decision 0952).
 */
#include <immintrin.h>
#include <stdlib.h>
#include "poot_cpu.h"

#define INLINE static inline __attribute__((always_inline))

#if defined(__AVX512F__)
#define VW 16
#define KERNELS poot_kernels_avx512
#define ISA "avx512"
typedef __m512 vf;
typedef __m512i vi;
INLINE vf vzero(void) { return _mm512_setzero_ps(); }
INLINE vf vload(const float *p) { return _mm512_loadu_ps(p); }
INLINE void vstore(float *p, vf a) { _mm512_storeu_ps(p, a); }
INLINE vf vset(float v) { return _mm512_set1_ps(v); }
INLINE vf vadd(vf a, vf b) { return _mm512_add_ps(a, b); }
INLINE vf vsub(vf a, vf b) { return _mm512_sub_ps(a, b); }
INLINE vf vmul(vf a, vf b) { return _mm512_mul_ps(a, b); }
INLINE vf vcvt(vi a) { return _mm512_cvtepi32_ps(a); }
INLINE vi u8x(const uint8_t *p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p)); }
INLINE vi i8x(const uint8_t *p) { return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)); }
INLINE vi iset(int v) { return _mm512_set1_epi32(v); }
INLINE vi iand(vi a, int m) { return _mm512_and_si512(a, iset(m)); }
INLINE vi ior(vi a, vi b) { return _mm512_or_si512(a, b); }
INLINE vi isub(vi a, int v) { return _mm512_sub_epi32(a, iset(v)); }
#define ISRL(a, s) _mm512_srli_epi32(a, s)
#define ISLL(a, s) _mm512_slli_epi32(a, s)
INLINE vf h2f(const uint8_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
INLINE vf bf2f(const uint8_t *p) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16)); }
/* Lanes summed as two 8-lane halves added, then as the AVX2 file does. */
INLINE float vsum(vf a) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 p = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}
#else
#define VW 8
#define KERNELS poot_kernels_avx2
#define ISA "avx2"
typedef __m256 vf;
typedef __m256i vi;
INLINE vf vzero(void) { return _mm256_setzero_ps(); }
INLINE vf vload(const float *p) { return _mm256_loadu_ps(p); }
INLINE void vstore(float *p, vf a) { _mm256_storeu_ps(p, a); }
INLINE vf vset(float v) { return _mm256_set1_ps(v); }
INLINE vf vadd(vf a, vf b) { return _mm256_add_ps(a, b); }
INLINE vf vsub(vf a, vf b) { return _mm256_sub_ps(a, b); }
INLINE vf vmul(vf a, vf b) { return _mm256_mul_ps(a, b); }
INLINE vf vcvt(vi a) { return _mm256_cvtepi32_ps(a); }
INLINE vi u8x(const uint8_t *p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)); }
INLINE vi i8x(const uint8_t *p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)); }
INLINE vi iset(int v) { return _mm256_set1_epi32(v); }
INLINE vi iand(vi a, int m) { return _mm256_and_si256(a, iset(m)); }
INLINE vi ior(vi a, vi b) { return _mm256_or_si256(a, b); }
INLINE vi isub(vi a, int v) { return _mm256_sub_epi32(a, iset(v)); }
#define ISRL(a, s) _mm256_srli_epi32(a, s)
#define ISLL(a, s) _mm256_slli_epi32(a, s)
INLINE vf h2f(const uint8_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
INLINE vf bf2f(const uint8_t *p) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16)); }
INLINE float vsum(vf h) {
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 p = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}
#endif

INLINE float f16s(const uint8_t *p) { return _cvtsh_ss((unsigned short)(p[0] | (p[1] << 8))); }
INLINE float bf16s(const uint8_t *p) {
  union { uint32_t u; float f; } v = { (uint32_t)(p[0] | (p[1] << 8)) << 16 };
  return v.f;
}

/*
 * A format's weights reach `emit(w, k)`: w holds VW decoded weights of elements k..k+VW-1 of the row. The GEMV sink
 * multiplies them by x and adds into one of four sums; the decode sink stores them for the M > 1 path.
 */
typedef struct {
  vf acc[4];
  const float *x;
  float *out;
  int store;
} sink;

INLINE void emit(sink *s, vf w, uint32_t k, int slot) {
  if (s->store) vstore(s->out + k, w);
  else s->acc[slot & 3] = vadd(s->acc[slot & 3], vmul(w, vload(s->x + k)));
}

/* Q8_0 {f16 d; i8 q[32]}: w = d*q (exact in f32). */
INLINE void row_q8_0(sink *s, const uint8_t *w, uint32_t K) {
  for (uint32_t b = 0; b < K / 32; b++) {
    const uint8_t *blk = w + 34u * b;
    const vf d = vset(f16s(blk));
    /* Sum slots fixed per j (a slot that varies with b would keep the sums in memory). */
    for (int j = 0; j < 32; j += VW) emit(s, vmul(d, vcvt(i8x(blk + 2 + j))), 32 * b + j, j / VW);
  }
}

/* out[i] = d * (float)q[i] for 8 unsigned (or, with `sign`, signed) bytes: each product one f32 multiply, as scalar. */
INLINE void scaled8(const uint8_t *q, int sign, float d, float *out) {
  const __m128i b = _mm_loadl_epi64((const __m128i *)q);
  const __m256i i = sign ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
  _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(i)));
}

/* Q4_K's eight 6-bit scales then eight mins as bytes (ggml get_scale_min_k4 for j = 0..7, word-parallel). */
INLINE void scales_mins_k4(const uint8_t *q, uint8_t out[16]) {
  uint32_t u[3], o[4];
  __builtin_memcpy(u, q, 12);
  o[0] = u[0] & 0x3f3f3f3f;
  o[1] = (u[2] & 0x0f0f0f0f) | (((u[0] >> 6) & 0x03030303) << 4);
  o[2] = u[1] & 0x3f3f3f3f;
  o[3] = ((u[2] >> 4) & 0x0f0f0f0f) | (((u[1] >> 6) & 0x03030303) << 4);
  __builtin_memcpy(out, o, 16);
}

/* Q4_K {f16 d, dmin; u8 scales[12]; u8 qs[128]}: w = (d*sc)*q - dmin*m, each product and the difference rounded. */
INLINE void row_q4_k(sink *s, const uint8_t *w, uint32_t K) {
  for (uint32_t b = 0; b < K / 256; b++) {
    const uint8_t *blk = w + 144u * b;
    uint8_t sm[16];
    float ds[8], ms[8];
    scales_mins_k4(blk + 4, sm);
    scaled8(sm, 0, f16s(blk), ds);
    scaled8(sm + 8, 0, f16s(blk + 2), ms);
    for (int j = 0; j < 4; j++) {
      const float d1 = ds[2 * j], mm1 = ms[2 * j], d2 = ds[2 * j + 1], mm2 = ms[2 * j + 1];
      const uint8_t *q = blk + 16 + 32 * j;
      const uint32_t k = 256 * b + 64 * j;
#if VW == 16
      /* 16 possible weights per sub-block: a table of exactly the recipe's values, looked up by nibble. */
      const vf iota = _mm512_set_ps(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
      const vf t1 = vsub(vmul(vset(d1), iota), vset(mm1)), t2 = vsub(vmul(vset(d2), iota), vset(mm2));
      for (int l = 0; l < 32; l += 16) {
        const vi by = u8x(q + l);
        /* vpermps reads only an index's low 4 bits: the low nibble needs no mask. */
        emit(s, _mm512_permutexvar_ps(by, t1), k + l, l / 16);
        emit(s, _mm512_permutexvar_ps(ISRL(by, 4), t2), k + 32 + l, 2 + l / 16);
      }
#else
      const vf vd1 = vset(d1), vm1 = vset(mm1), vd2 = vset(d2), vm2 = vset(mm2);
      for (int l = 0; l < 32; l += 8) {
        const vi by = u8x(q + l);
        emit(s, vsub(vmul(vd1, vcvt(iand(by, 15))), vm1), k + l, l / 8);
        emit(s, vsub(vmul(vd2, vcvt(ISRL(by, 4))), vm2), k + 32 + l, l / 8);
      }
#endif
    }
  }
}

/* Q6_K {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}: w = (d*sc)*(q6 - 32), the product rounded once. The 6-bit
 * values of 32 elements are assembled as bytes (q6 - 32 fits an i8), then widened VW at a time. */
INLINE void row_q6_k(sink *s, const uint8_t *w, uint32_t K) {
  const __m256i lo4 = _mm256_set1_epi8(0x0f), b2 = _mm256_set1_epi8(0x03), b32 = _mm256_set1_epi8(32);
  for (uint32_t b = 0; b < K / 256; b++) {
    const uint8_t *blk = w + 210u * b;
    const float d = f16s(blk + 208);
    float sc[16];
    scaled8(blk + 192, 1, d, sc);
    scaled8(blk + 200, 1, d, sc + 8);
    for (int n = 0; n < 2; n++) {
      const uint8_t *ql = blk + 64 * n, *qh = blk + 128 + 32 * n;
      const float *scn = sc + 8 * n;
      const uint32_t k = 256 * b + 128 * n;
      const __m256i a = _mm256_loadu_si256((const __m256i *)ql), c = _mm256_loadu_si256((const __m256i *)(ql + 32));
      const __m256i h = _mm256_loadu_si256((const __m256i *)qh);
      /* Byte shifts as 16-bit shifts, masked so no bit crosses into the neighbouring byte. */
      __m256i q[4];
      q[0] = _mm256_or_si256(_mm256_and_si256(a, lo4), _mm256_slli_epi16(_mm256_and_si256(h, b2), 4));
      q[1] = _mm256_or_si256(_mm256_and_si256(c, lo4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), b2), 4));
      q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), lo4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), b2), 4));
      q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(c, 4), lo4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), b2), 4));
      for (int g = 0; g < 4; g++) {
        const __m256i v = _mm256_sub_epi8(q[g], b32);
        const __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
        const vf s0 = vset(scn[2 * g]), s1 = vset(scn[1 + 2 * g]);
#if VW == 16
        emit(s, vmul(s0, vcvt(_mm512_cvtepi8_epi32(lo))), k + 32 * g, g);
        emit(s, vmul(s1, vcvt(_mm512_cvtepi8_epi32(hi))), k + 32 * g + 16, g);
#else
        emit(s, vmul(s0, vcvt(_mm256_cvtepi8_epi32(lo))), k + 32 * g, g);
        emit(s, vmul(s0, vcvt(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)))), k + 32 * g + 8, g);
        emit(s, vmul(s1, vcvt(_mm256_cvtepi8_epi32(hi))), k + 32 * g + 16, g);
        emit(s, vmul(s1, vcvt(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)))), k + 32 * g + 24, g);
#endif
      }
    }
  }
}

/* Dense rows: whole vectors of K, then the scalar tail into `tail`. */
#define ROW_DENSE(NAME, BYTES, LOADV, LOADS)                                              \
  INLINE void NAME(sink *s, const uint8_t *w, uint32_t K, float *tail) {                  \
    uint32_t k = 0;                                                                       \
    for (; k + 4 * VW <= K; k += 4 * VW)                                                  \
      for (int q = 0; q < 4; q++) emit(s, LOADV(w + (k + q * VW) * BYTES), k + q * VW, q); \
    for (; k + VW <= K; k += VW) emit(s, LOADV(w + k * BYTES), k, 0);                     \
    for (; k < K; k++) {                                                                  \
      const float wk = LOADS(w + k * BYTES);                                              \
      if (s->store) s->out[k] = wk;                                                       \
      else *tail += wk * s->x[k];                                                         \
    }                                                                                     \
  }
INLINE vf f32v(const uint8_t *p) { return vload((const float *)p); }
INLINE float f32s(const uint8_t *p) { return *(const float *)p; }
ROW_DENSE(row_f32, 4, f32v, f32s)
ROW_DENSE(row_f16, 2, h2f, f16s)
ROW_DENSE(row_bf16, 2, bf2f, bf16s)

/* Runs one row of `fmt` into the sink; returns the scalar tail of a dense row (0 otherwise). */
INLINE float row(sink *s, uint32_t fmt, const uint8_t *w, uint32_t K) {
  float tail = 0.0f;
  switch (fmt) {
    case POOT_Q8_0: row_q8_0(s, w, K); break;
    case POOT_Q4_K: row_q4_k(s, w, K); break;
    case POOT_Q6_K: row_q6_k(s, w, K); break;
    case POOT_F32: row_f32(s, w, K, &tail); break;
    case POOT_F16: row_f16(s, w, K, &tail); break;
    case POOT_BF16: row_bf16(s, w, K, &tail); break;
    default: break;
  }
  return tail;
}

static uint64_t row_bytes(uint32_t fmt, uint32_t K) {
  switch (fmt) {
    case POOT_Q8_0: return (uint64_t)K / 32 * 34;
    case POOT_Q4_K: return (uint64_t)K / 256 * 144;
    case POOT_Q6_K: return (uint64_t)K / 256 * 210;
    case POOT_F32: return (uint64_t)K * 4;
    default: return (uint64_t)K * 2;
  }
}

/* ((a0 + a1) + (a2 + a3)) lane-summed, plus the tail. */
INLINE float total(const sink *s, float tail) {
  return vsum(vadd(vadd(s->acc[0], s->acc[1]), vadd(s->acc[2], s->acc[3]))) + tail;
}

/* One decoded row (f32) dotted with x, into two sums; the tail element by element. */
INLINE float dot_decoded(const float *w, const float *x, uint32_t K) {
  vf a0 = vzero(), a1 = vzero();
  uint32_t k = 0;
  for (; k + 2 * VW <= K; k += 2 * VW) {
    a0 = vadd(a0, vmul(vload(w + k), vload(x + k)));
    a1 = vadd(a1, vmul(vload(w + k + VW), vload(x + k + VW)));
  }
  for (; k + VW <= K; k += VW) a0 = vadd(a0, vmul(vload(w + k), vload(x + k)));
  float tail = 0.0f;
  for (; k < K; k++) tail += w[k] * x[k];
  return vsum(vadd(a0, a1)) + tail;
}

/* Four decoded rows dotted with one x row: each x vector loaded once for the four sums; tails element by element. */
INLINE void dot4_decoded(const float *w, uint32_t K, const float *x, float out[4]) {
  vf a0 = vzero(), a1 = vzero(), a2 = vzero(), a3 = vzero();
  uint32_t k = 0;
  for (; k + VW <= K; k += VW) {
    const vf xv = vload(x + k);
    a0 = vadd(a0, vmul(vload(w + k), xv));
    a1 = vadd(a1, vmul(vload(w + K + k), xv));
    a2 = vadd(a2, vmul(vload(w + 2 * (uint64_t)K + k), xv));
    a3 = vadd(a3, vmul(vload(w + 3 * (uint64_t)K + k), xv));
  }
  float t[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
  for (; k < K; k++)
    for (int i = 0; i < 4; i++) t[i] += w[i * (uint64_t)K + k] * x[k];
  out[0] = vsum(a0) + t[0];
  out[1] = vsum(a1) + t[1];
  out[2] = vsum(a2) + t[2];
  out[3] = vsum(a3) + t[3];
}

/* M > 1 (prefill): four rows decoded once into `buf`, then dotted with each of the M rows of x. */
static void gemv_rows(const uint8_t *w, uint32_t fmt, const float *x, float *y, const float *r, uint32_t M, uint32_t N, uint32_t K, uint32_t n0, uint32_t n1) {
  float *buf = (float *)aligned_alloc(64, ((size_t)K * 16 + 63) / 64 * 64);
  if (!buf) __builtin_trap();
  const uint64_t rb = row_bytes(fmt, K);
  for (uint32_t n = n0; n < n1; n += 4) {
    const uint32_t rows = n1 - n < 4 ? n1 - n : 4;
    for (uint32_t i = 0; i < rows; i++) {
      sink s = { { vzero(), vzero(), vzero(), vzero() }, 0, buf + (uint64_t)i * K, 1 };
      row(&s, fmt, w + (n + i) * rb, K);
    }
    for (uint32_t m = 0; m < M; m++) {
      const float *xm = x + (uint64_t)m * K;
      float acc[4];
      if (rows == 4) dot4_decoded(buf, K, xm, acc);
      else
        for (uint32_t i = 0; i < rows; i++) acc[i] = dot_decoded(buf + (uint64_t)i * K, xm, K);
      for (uint32_t i = 0; i < rows; i++) {
        const uint64_t o = (uint64_t)m * N + n + i;
        y[o] = r ? acc[i] + r[o] : acc[i];
      }
    }
  }
  free(buf);
}

static void gemv(const uint8_t *w, uint32_t fmt, const float *x, float *y, const float *r, uint32_t M, uint32_t N, uint32_t K, uint32_t n0, uint32_t n1) {
  if (M != 1) {
    gemv_rows(w, fmt, x, y, r, M, N, K, n0, n1);
    return;
  }
  const uint64_t rb = row_bytes(fmt, K);
  for (uint32_t n = n0; n < n1; n++) {
    sink s = { { vzero(), vzero(), vzero(), vzero() }, x, 0, 0 };
    const float acc = total(&s, row(&s, fmt, w + n * rb, K));
    y[n] = r ? acc + r[n] : acc;
  }
}

const poot_kernels KERNELS = { ISA, gemv };
