/* rng.c: the host cursor and fills over the Philox core of philox.h (see rng.h), and the AVX2
 * keep masks: 8 or 16 blocks side by side, their own vector rounds giving the core's bits. */
#include "tensor/rng.h"

void tt_rng_init(tt_rng *r, uint64_t seed, uint64_t stream)
{
    *r = (tt_rng){.seed = seed, .stream = stream, .counter = 0};
}

uint32_t tt_rng_word(uint64_t seed, uint64_t stream, uint64_t e)
{
    return tt_philox_word(seed, stream, e);
}

/* exact in float32: 24 bits */
real tt_rng_word_uniform(uint32_t w) { return (real)tt_philox_uniform(w); }

tt_rng tt_rng_take(tt_rng *r, int64_t n)
{
    TT_ASSERT(n >= 0);
    tt_rng at = *r;
    r->counter += ((uint64_t)n + 3) & ~(uint64_t)3;
    return at;
}

tt_rng tt_rng_take_share(tt_rng *r, int64_t n, int part, int parts)
{
    TT_ASSERT_MSG(parts >= 1 && part >= 0 && part < parts, "tt_rng_take_share: share %d of %d",
                  part, parts);
    tt_rng at = tt_rng_take(r, n * parts);
    at.counter += (uint64_t)part * (uint64_t)n;
    return at;
}

real tt_rng_uniform_at(const tt_rng *at, int64_t e)
{
    return tt_rng_word_uniform(tt_rng_word(at->seed, at->stream, at->counter + (uint64_t)e));
}

void tt_rng_uniform4_at(const tt_rng *at, int64_t j, real out[4])
{
    TT_ASSERT_MSG((at->counter & 3) == 0, "tt_rng_uniform4_at: counter %llu not a multiple of 4",
                  (unsigned long long)at->counter);
    uint32_t w[4];
    tt_philox_block(at->seed, at->stream, (at->counter >> 2) + (uint64_t)j, w);
    for (int k = 0; k < 4; k++) out[k] = tt_rng_word_uniform(w[k]);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_PHILOX_AVX2 1

/* hi and lo halves of the 32x32->64 products a * m on all 8 lanes: mul_epu32 multiplies the
 * even lanes, so the odd ones are shifted down, multiplied, and the halves blended back. */
__attribute__((target("avx2"))) static inline void mul_hi_lo(__m256i a, __m256i m, __m256i *hi,
                                                             __m256i *lo)
{
    __m256i even = _mm256_mul_epu32(a, m), odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
    *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

/* tt_philox_block of G groups of 8 blocks with AVX2 intrinsics (group g: blocks b0 + 8g ..
 * b0 + 8g + 7): the core's key schedule and rounds, lane by lane (tests/test_threads.c checks the
 * bits against it). The groups' rounds interleave, so with G = 2 the multiplies of one hide
 * the latency of the other's. c[g][k] lane i is word k of block b0 + 8g + i. About 4x (G = 1)
 * and 5x (G = 2) the portable loop's speed under GCC 12. */
__attribute__((target("avx2"), always_inline)) static inline void
philox_avx2_regs(uint64_t b0, uint64_t seed, uint64_t stream, int G, __m256i c[][4])
{
    const __m256i m0 = _mm256_set1_epi32((int)TT_PHILOX_M0);
    const __m256i m1 = _mm256_set1_epi32((int)TT_PHILOX_M1);
    const __m256i w0 = _mm256_set1_epi32((int)TT_PHILOX_W0);
    const __m256i w1 = _mm256_set1_epi32((int)TT_PHILOX_W1);
    for (int g = 0; g < G; g++) {
        uint32_t lo[8], hi[8];
        for (int i = 0; i < 8; i++) {
            uint64_t b = b0 + (uint64_t)(8 * g + i);
            lo[i] = (uint32_t)b;
            hi[i] = (uint32_t)(b >> 32);
        }
        c[g][0] = _mm256_loadu_si256((const __m256i *)lo);
        c[g][1] = _mm256_loadu_si256((const __m256i *)hi);
        c[g][2] = _mm256_set1_epi32((int)(uint32_t)stream);
        c[g][3] = _mm256_set1_epi32((int)(uint32_t)(stream >> 32));
    }
    __m256i k0 = _mm256_set1_epi32((int)(uint32_t)seed);
    __m256i k1 = _mm256_set1_epi32((int)(uint32_t)(seed >> 32));
    for (int round = 0; round < 10; round++) {
        for (int g = 0; g < G; g++) {
            __m256i hi0, lo0, hi1, lo1;
            mul_hi_lo(c[g][0], m0, &hi0, &lo0);
            mul_hi_lo(c[g][2], m1, &hi1, &lo1);
            c[g][0] = _mm256_xor_si256(_mm256_xor_si256(hi1, c[g][1]), k0);
            c[g][2] = _mm256_xor_si256(_mm256_xor_si256(hi0, c[g][3]), k1);
            c[g][1] = lo1;
            c[g][3] = lo0;
        }
        k0 = _mm256_add_epi32(k0, w0);
        k1 = _mm256_add_epi32(k1, w1);
    }
}

/* keep[e] = (word e >> 8) >= thr for the 32 words of one group, in element order: the four
 * masks (word k of each block) are transposed 4x4 inside each 128-bit half, then packed
 * 32 -> 16 -> 8 bits, which puts elements 0..31 in order. */
__attribute__((target("avx2"))) static inline void keep_bytes(const __m256i c[4], __m256i t,
                                                              uint8_t keep[32])
{
    __m256i m[4];
    for (int k = 0; k < 4; k++) m[k] = _mm256_cmpgt_epi32(_mm256_srli_epi32(c[k], 8), t);
    __m256i a0 = _mm256_unpacklo_epi32(m[0], m[1]), a1 = _mm256_unpackhi_epi32(m[0], m[1]);
    __m256i b0 = _mm256_unpacklo_epi32(m[2], m[3]), b1 = _mm256_unpackhi_epi32(m[2], m[3]);
    __m256i t0 = _mm256_unpacklo_epi64(a0, b0), t1 = _mm256_unpackhi_epi64(a0, b0);
    __m256i t2 = _mm256_unpacklo_epi64(a1, b1), t3 = _mm256_unpackhi_epi64(a1, b1);
    __m256i u0 = _mm256_packs_epi32(t0, t1), u1 = _mm256_packs_epi32(t2, t3);
    __m256i bytes = _mm256_and_si256(_mm256_packs_epi16(u0, u1), _mm256_set1_epi8(1));
    _mm256_storeu_si256((__m256i *)keep, bytes);
}

/* n32 groups of 32 keep bytes from block b0 on, two groups per round of Philox where it can */
__attribute__((target("avx2"))) static void keep_avx2(uint64_t b0, uint64_t seed,
                                                      uint64_t stream, uint32_t thr, int64_t n32,
                                                      uint8_t *keep)
{
    /* (w >> 8) < 2^24 and thr <= 2^24 + 1: signed compares are exact */
    const __m256i t = _mm256_set1_epi32((int)thr - 1);
    int64_t g = 0;
    for (; g + 2 <= n32; g += 2) {
        __m256i c[2][4];
        philox_avx2_regs(b0 + 8 * (uint64_t)g, seed, stream, 2, c);
        keep_bytes(c[0], t, keep + 32 * g);
        keep_bytes(c[1], t, keep + 32 * (g + 1));
    }
    if (g < n32) {
        __m256i c[1][4];
        philox_avx2_regs(b0 + 8 * (uint64_t)g, seed, stream, 1, c);
        keep_bytes(c[0], t, keep + 32 * g);
    }
}
/* The same with AVX-512 (F and BW): 16 blocks per vector, so one group is 64 keep bytes, two
 * groups per round of Philox where it can. The rounds keep each word in the low half of a
 * 64-bit lane, 8 blocks to a vector (a group: blocks b0 .. b0 + 7 and b0 + 8 .. b0 + 15), so
 * one multiply gives a word's whole 64-bit product: its high half is a shift away and its low
 * half is the lane itself (the upper halves carry garbage that no multiply reads and the last
 * step drops), and the two xors of a word are one ternary-logic op: 12 operations a round for
 * 16 blocks where splitting each product out of 32-bit lanes took 18. The words then go back
 * to 32-bit lanes, block i in lane i, for keep_bytes512, whose transposes and packs work
 * inside each 128-bit lane as keep_bytes' do, so lane L holds elements 16L .. 16L + 15 in
 * order. */
#define XOR3 0x96 /* _mm512_ternarylogic_epi64's table for a ^ b ^ c */

__attribute__((target("avx512f,avx512bw"), always_inline)) static inline void
philox_avx512_regs(uint64_t b0, uint64_t seed, uint64_t stream, int G, __m512i c[][4])
{
    const __m512i m0 = _mm512_set1_epi64(TT_PHILOX_M0), m1 = _mm512_set1_epi64(TT_PHILOX_M1);
    const __m512i w0 = _mm512_set1_epi32((int)TT_PHILOX_W0);
    const __m512i w1 = _mm512_set1_epi32((int)TT_PHILOX_W1);
    __m512i h[4][4]; /* half q = 2g + (0 or 1): blocks b0 + 8q + i in lane i */
    for (int q = 0; q < 2 * G; q++) {
        h[q][0] = _mm512_add_epi64(_mm512_set1_epi64((long long)(b0 + 8 * (uint64_t)q)),
                                   _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7));
        h[q][1] = _mm512_srli_epi64(h[q][0], 32);
        h[q][2] = _mm512_set1_epi64((long long)(uint32_t)stream);
        h[q][3] = _mm512_set1_epi64((long long)(stream >> 32));
    }
    __m512i k0 = _mm512_set1_epi32((int)(uint32_t)seed);
    __m512i k1 = _mm512_set1_epi32((int)(uint32_t)(seed >> 32));
    for (int round = 0; round < 10; round++) {
        for (int q = 0; q < 2 * G; q++) {
            __m512i p0 = _mm512_mul_epu32(h[q][0], m0), p1 = _mm512_mul_epu32(h[q][2], m1);
            h[q][0] = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p1, 32), h[q][1], k0, XOR3);
            h[q][2] = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p0, 32), h[q][3], k1, XOR3);
            h[q][1] = p1;
            h[q][3] = p0;
        }
        k0 = _mm512_add_epi32(k0, w0);
        k1 = _mm512_add_epi32(k1, w1);
    }
    /* the low halves of two halves' lanes, in order: 32-bit lane i of a group is block i */
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28,
                                           30);
    for (int g = 0; g < G; g++)
        for (int k = 0; k < 4; k++)
            c[g][k] = _mm512_permutex2var_epi32(h[2 * g][k], even, h[2 * g + 1][k]);
}

__attribute__((target("avx512f,avx512bw"))) static inline void keep_bytes512(const __m512i c[4],
                                                                           __m512i t,
                                                                           uint8_t keep[64])
{
    const __m512i ones = _mm512_set1_epi32(-1);
    __m512i m[4];
    for (int k = 0; k < 4; k++)
        m[k] = _mm512_maskz_mov_epi32(_mm512_cmpgt_epi32_mask(_mm512_srli_epi32(c[k], 8), t),
                                      ones);
    __m512i a0 = _mm512_unpacklo_epi32(m[0], m[1]), a1 = _mm512_unpackhi_epi32(m[0], m[1]);
    __m512i b0 = _mm512_unpacklo_epi32(m[2], m[3]), b1 = _mm512_unpackhi_epi32(m[2], m[3]);
    __m512i t0 = _mm512_unpacklo_epi64(a0, b0), t1 = _mm512_unpackhi_epi64(a0, b0);
    __m512i t2 = _mm512_unpacklo_epi64(a1, b1), t3 = _mm512_unpackhi_epi64(a1, b1);
    __m512i u0 = _mm512_packs_epi32(t0, t1), u1 = _mm512_packs_epi32(t2, t3);
    __m512i bytes = _mm512_and_si512(_mm512_packs_epi16(u0, u1), _mm512_set1_epi8(1));
    _mm512_storeu_si512(keep, bytes);
}

/* n32 groups of 32 keep bytes: 64 at a time (two vector groups per round where it can), the
 * odd group of 32 left over by keep_avx2 */
__attribute__((target("avx512f,avx512bw"))) static void keep_avx512(uint64_t b0, uint64_t seed,
                                                                  uint64_t stream, uint32_t thr,
                                                                  int64_t n32, uint8_t *keep)
{
    const __m512i t = _mm512_set1_epi32((int)thr - 1);
    int64_t g = 0; /* in groups of 32 bytes (8 blocks) */
    for (; g + 4 <= n32; g += 4) {
        __m512i c[2][4];
        philox_avx512_regs(b0 + 8 * (uint64_t)g, seed, stream, 2, c);
        keep_bytes512(c[0], t, keep + 32 * g);
        keep_bytes512(c[1], t, keep + 32 * (g + 2));
    }
    if (g + 2 <= n32) {
        __m512i c[1][4];
        philox_avx512_regs(b0 + 8 * (uint64_t)g, seed, stream, 1, c);
        keep_bytes512(c[0], t, keep + 32 * g);
        g += 2;
    }
    if (g < n32) keep_avx2(b0 + 8 * (uint64_t)g, seed, stream, thr, n32 - g, keep + 32 * g);
}
#endif

static bool have_avx512(void)
{
#ifdef HAVE_PHILOX_AVX2
    static int yes = -1; /* racy but idempotent */
    if (yes < 0)
        yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") ? 1 : 0;
    return yes;
#else
    return false;
#endif
}

static bool have_avx2(void)
{
#ifdef HAVE_PHILOX_AVX2
    static int avx2 = -1; /* racy but idempotent: every thread stores the same answer */
    if (avx2 < 0) avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
    return avx2;
#else
    return false;
#endif
}

void tt_rng_keep_at(const tt_rng *at, int64_t j, uint32_t thr, int64_t n32, uint8_t *keep)
{
    TT_ASSERT_MSG((at->counter & 3) == 0, "tt_rng_keep_at: counter %llu not a multiple of 4",
                  (unsigned long long)at->counter);
#ifdef HAVE_PHILOX_AVX2
    if (have_avx512()) {
        keep_avx512((at->counter >> 2) + (uint64_t)j, at->seed, at->stream, thr, n32, keep);
        return;
    }
    if (have_avx2()) {
        keep_avx2((at->counter >> 2) + (uint64_t)j, at->seed, at->stream, thr, n32, keep);
        return;
    }
#endif
    uint32_t w[4];
    for (int64_t b = 0; b < 8 * n32; b++) { /* one block at a time */
        tt_philox_block(at->seed, at->stream, (at->counter >> 2) + (uint64_t)(j + b), w);
        for (int k = 0; k < 4; k++) keep[4 * b + k] = (uint8_t)tt_philox_keep(w[k], thr);
    }
}

real tt_rng_normal_at(const tt_rng *at, int64_t e)
{
    /* Elements 2j and 2j+1 share the word pair (2j, 2j+1): cos and sin branches of one
     * Box-Muller draw. u1 in (0,1] so the log is finite. Computed in double for both builds. */
    uint64_t base = at->counter + ((uint64_t)e & ~(uint64_t)1);
    double u1 = tt_philox_uniform_pos(tt_philox_word(at->seed, at->stream, base));
    double u2 = tt_philox_uniform(tt_philox_word(at->seed, at->stream, base + 1));
    double radius = sqrt(-2.0 * log(u1));
    double angle = 6.283185307179586 * u2;
    return (real)((e & 1) ? radius * sin(angle) : radius * cos(angle));
}

void tt_rng_uniform(tt_rng *r, real *out, int64_t n, real lo, real hi)
{
    tt_rng at = tt_rng_take(r, n);
    for (int64_t i = 0; i < n; i++) out[i] = lo + (hi - lo) * tt_rng_uniform_at(&at, i);
}

void tt_rng_normal(tt_rng *r, real *out, int64_t n, real mean, real std)
{
    tt_rng at = tt_rng_take(r, n);
    for (int64_t i = 0; i < n; i++) out[i] = mean + std * tt_rng_normal_at(&at, i);
}

void tt_rng_bernoulli(tt_rng *r, real *out, int64_t n, real p)
{
    tt_rng at = tt_rng_take(r, n);
    for (int64_t i = 0; i < n; i++) out[i] = tt_rng_uniform_at(&at, i) < p ? R(1) : R(0);
}
