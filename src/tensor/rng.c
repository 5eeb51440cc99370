/* rng.c: Philox4x32-10 and the draws built on it (see rng.h).
 * Philox: 10 rounds of two 32x32->64 multiplies, key bumped by the Weyl constants each round. */
#include "tensor/rng.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void tt_philox4x32(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4])
{
    uint32_t k0 = key[0], k1 = key[1];
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* Block b of (seed, stream): counter = (b low, b high, stream low, stream high), key = seed. */
static void block(uint64_t seed, uint64_t stream, uint64_t b, uint32_t out[4])
{
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32), (uint32_t)stream,
                             (uint32_t)(stream >> 32)};
    tt_philox4x32(key, ctr, out);
}

void tt_rng_init(tt_rng *r, uint64_t seed, uint64_t stream)
{
    *r = (tt_rng){.seed = seed, .stream = stream, .counter = 0};
}

uint32_t tt_rng_word(uint64_t seed, uint64_t stream, uint64_t e)
{
    uint32_t w[4];
    block(seed, stream, e >> 2, w);
    return w[e & 3];
}

real tt_rng_word_uniform(uint32_t w) { return (real)(w >> 8) * R(1.0 / 16777216.0); }

tt_rng tt_rng_take(tt_rng *r, int64_t n)
{
    TT_ASSERT(n >= 0);
    tt_rng at = *r;
    r->counter += ((uint64_t)n + 3) & ~(uint64_t)3;
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
    block(at->seed, at->stream, (at->counter >> 2) + (uint64_t)j, w);
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

/* G groups of 8 blocks with AVX2 intrinsics (group g: blocks b0 + 8g .. b0 + 8g + 7); the
 * groups' rounds interleave, so with G = 2 the multiplies of one hide the latency of the
 * other's. c[g][k] lane i is word k of block b0 + 8g + i. About 4x (G = 1) and 5x (G = 2)
 * the portable loop's speed under GCC 12. */
__attribute__((target("avx2"), always_inline)) static inline void
philox_avx2_regs(uint64_t b0, uint64_t seed, uint64_t stream, int G, __m256i c[][4])
{
    const __m256i m0 = _mm256_set1_epi32((int)PHILOX_M0), m1 = _mm256_set1_epi32((int)PHILOX_M1);
    const __m256i w0 = _mm256_set1_epi32((int)PHILOX_W0), w1 = _mm256_set1_epi32((int)PHILOX_W1);
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
#endif

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
    if (have_avx2()) {
        keep_avx2((at->counter >> 2) + (uint64_t)j, at->seed, at->stream, thr, n32, keep);
        return;
    }
#endif
    uint32_t w[4];
    for (int64_t b = 0; b < 8 * n32; b++) { /* one block at a time */
        block(at->seed, at->stream, (at->counter >> 2) + (uint64_t)(j + b), w);
        for (int k = 0; k < 4; k++) keep[4 * b + k] = (w[k] >> 8) >= thr;
    }
}

real tt_rng_normal_at(const tt_rng *at, int64_t e)
{
    /* Elements 2j and 2j+1 share the word pair (2j, 2j+1): cos and sin branches of one
     * Box-Muller draw. u1 in (0,1] so the log is finite. Computed in double for both builds. */
    uint64_t base = at->counter + ((uint64_t)e & ~(uint64_t)1);
    uint32_t w1 = tt_rng_word(at->seed, at->stream, base);
    uint32_t w2 = tt_rng_word(at->seed, at->stream, base + 1);
    double u1 = ((double)(w1 >> 8) + 1.0) / 16777216.0;
    double u2 = (double)(w2 >> 8) / 16777216.0;
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
