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

/* Eight blocks side by side (structure of arrays): the rounds are the same 10 steps on 8
 * lanes, which the compiler turns into vector multiplies; AVX2 when the CPU has it. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx2", "default")))
#endif
void tt_rng_uniform32_at(const tt_rng *at, int64_t j, real out[4 * TT_RNG_LANES])
{
    TT_ASSERT_MSG((at->counter & 3) == 0, "tt_rng_uniform32_at: counter %llu not a multiple of "
                  "4", (unsigned long long)at->counter);
    uint32_t c0[TT_RNG_LANES], c1[TT_RNG_LANES], c2[TT_RNG_LANES], c3[TT_RNG_LANES];
    uint64_t b0 = (at->counter >> 2) + (uint64_t)j;
    for (int i = 0; i < TT_RNG_LANES; i++) {
        uint64_t b = b0 + (uint64_t)i;
        c0[i] = (uint32_t)b;
        c1[i] = (uint32_t)(b >> 32);
        c2[i] = (uint32_t)at->stream;
        c3[i] = (uint32_t)(at->stream >> 32);
    }
    uint32_t k0 = (uint32_t)at->seed, k1 = (uint32_t)(at->seed >> 32);
    for (int round = 0; round < 10; round++) {
        for (int i = 0; i < TT_RNG_LANES; i++) {
            uint64_t p0 = (uint64_t)PHILOX_M0 * c0[i];
            uint64_t p1 = (uint64_t)PHILOX_M1 * c2[i];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[i] ^ k0;
            uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3[i] ^ k1;
            c1[i] = (uint32_t)p1;
            c3[i] = (uint32_t)p0;
            c0[i] = n0;
            c2[i] = n2;
        }
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    for (int i = 0; i < TT_RNG_LANES; i++) {
        out[4 * i] = tt_rng_word_uniform(c0[i]);
        out[4 * i + 1] = tt_rng_word_uniform(c1[i]);
        out[4 * i + 2] = tt_rng_word_uniform(c2[i]);
        out[4 * i + 3] = tt_rng_word_uniform(c3[i]);
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
