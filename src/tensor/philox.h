/* philox.h: the one Philox4x32-10 core (Salmon et al., SC'11), header-only and device-neutral.
 *
 * Every random bit of the runtime (initial values, dropout masks, shuffles) is a pure function of
 * (seed, stream, element) computed here, so host C code and a CUDA kernel that includes this
 * header draw the same bits. Hence only <stdint.h>, no intrinsics, no libc and no globals, and
 * TT_HD on every function (__host__ __device__ under nvcc). rng.h builds the host cursor and
 * fills on it; rng.c's AVX2 keep masks have their own vector rounds, checked against these. */
#ifndef TT_PHILOX_H
#define TT_PHILOX_H

#include <stdint.h>

#ifndef TT_HD
#ifdef __CUDACC__
#define TT_HD __host__ __device__
#else
#define TT_HD
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* the round multipliers and the Weyl constants that bump the key (Random123's values) */
#define TT_PHILOX_M0 0xD2511F53u
#define TT_PHILOX_M1 0xCD9E8D57u
#define TT_PHILOX_W0 0x9E3779B9u
#define TT_PHILOX_W1 0xBB67AE85u

/* One round on the counter c with key (k0, k1): two 32x32->64 multiplies, the words swapped. */
TT_HD static inline void tt_philox_round(uint32_t c[4], uint32_t k0, uint32_t k1)
{
    uint64_t p0 = (uint64_t)TT_PHILOX_M0 * c[0];
    uint64_t p1 = (uint64_t)TT_PHILOX_M1 * c[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c[0] = hi1 ^ c[1] ^ k0;
    c[1] = lo1;
    c[2] = hi0 ^ c[3] ^ k1;
    c[3] = lo0;
}

/* One Philox4x32-10 block: 4 random words for (key, counter). */
TT_HD static inline void tt_philox4x32(const uint32_t key[2], const uint32_t ctr[4],
                                       uint32_t out[4])
{
    uint32_t k0 = key[0], k1 = key[1];
    uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
    for (int round = 0; round < 10; round++) {
        tt_philox_round(c, k0, k1);
        k0 += TT_PHILOX_W0;
        k1 += TT_PHILOX_W1;
    }
    for (int i = 0; i < 4; i++) out[i] = c[i];
}

/* The key schedule of the runtime: block b of (seed, stream) has key = seed and
 * counter = (b low, b high, stream low, stream high), so element e is word e % 4 of block e / 4. */
TT_HD static inline void tt_philox_block(uint64_t seed, uint64_t stream, uint64_t b,
                                         uint32_t out[4])
{
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    const uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32), (uint32_t)stream,
                             (uint32_t)(stream >> 32)};
    tt_philox4x32(key, ctr, out);
}

/* Word e of the sequence (seed, stream): a whole block for one word, so a kernel that needs
 * four neighbours calls tt_philox_block once instead. */
TT_HD static inline uint32_t tt_philox_word(uint64_t seed, uint64_t stream, uint64_t e)
{
    uint32_t w[4];
    tt_philox_block(seed, stream, e >> 2, w);
    return w[e & 3];
}

/* Uniform in [0, 1): the top 24 bits of a word times 2^-24, exact in float32 and float64, so
 * both builds (and a device) see the same number. */
TT_HD static inline double tt_philox_uniform(uint32_t w)
{
    return (double)(w >> 8) * (1.0 / 16777216.0);
}

/* Uniform in (0, 1], for Box-Muller's log (rng.c's normals): (bits + 1) * 2^-24. */
TT_HD static inline double tt_philox_uniform_pos(uint32_t w)
{
    return ((double)(w >> 8) + 1.0) * (1.0 / 16777216.0);
}

/* The dropout keep threshold of p: uniform >= p  <=>  (w >> 8) >= p 2^24  <=>
 * (w >> 8) >= ceil(p 2^24), exact for any float or double p (scaling by 2^24 is exact). p <= 0
 * gives 0 (keep all); p >= 1 gives 2^24 or more (drop all). ceil without libm: truncate, then
 * add one when something was cut off (t > 0 here, so truncation rounds down). */
TT_HD static inline uint32_t tt_philox_keep_threshold(double p)
{
    double t = p * 16777216.0;
    if (!(t > 0.0)) return 0;
    if (t > 16777216.0) return 16777217u;
    uint32_t i = (uint32_t)t;
    return (double)i < t ? i + 1 : i;
}

/* 1 when the element whose word is w survives dropout at threshold thr, else 0. */
TT_HD static inline int tt_philox_keep(uint32_t w, uint32_t thr) { return (w >> 8) >= thr; }

#ifdef __cplusplus
}
#endif

#endif
