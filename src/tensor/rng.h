/* rng.h: counter-based random numbers (Philox4x32-10, Salmon et al., SC'11).
 *
 * Element e of a draw is a pure function of (seed, stream, counter + e): it does not depend on
 * how many threads fill the array, on the backend, or on the precision of the build (uniforms
 * have 24 bits, exactly representable in float32 and float64). A tt_rng is the cursor:
 * each draw of n elements advances the counter by n rounded up to a multiple of 4, so a draw
 * always starts on a fresh Philox block. The bits come from tensor/philox.h, which a device
 * kernel includes to draw the same ones. */
#ifndef TT_RNG_H
#define TT_RNG_H

#include "tensor/real.h"
#include "tensor/common.h"
#include "tensor/philox.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tt_rng {
    uint64_t seed;
    uint64_t stream;  /* independent sequences for one seed: init, dropout, shuffling, ... */
    uint64_t counter; /* index of the next element, a multiple of 4 */
} tt_rng;

void tt_rng_init(tt_rng *r, uint64_t seed, uint64_t stream);

/* Raw word e of the sequence (seed, stream), independent of any cursor. */
uint32_t tt_rng_word(uint64_t seed, uint64_t stream, uint64_t e);
/* Uniform in [0,1) with 24 bits of the word. */
real tt_rng_word_uniform(uint32_t w);

/* Reserve n elements: returns the cursor before the draw and advances r. Kernels use the
 * returned value to generate the elements themselves (in any order, on any device). */
tt_rng tt_rng_take(tt_rng *r, int64_t n);

/* Share `part` of `parts` equal shares of a draw of n * parts elements (a data-parallel
 * rank's rows of a whole batch's draw): reserves the whole draw, as tt_rng_take, and returns
 * the cursor of elements part * n on. That cursor may start inside a Philox block (counter
 * not a multiple of 4): tt_rng_uniform_at, tt_cpu_keep_mask and kernel_math.h's
 * tt_dropout_keep4 take any cursor; tt_rng_uniform4_at and tt_rng_keep_at do not. */
tt_rng tt_rng_take_share(tt_rng *r, int64_t n, int part, int parts);

/* Host fills, each advancing the cursor. */
void tt_rng_uniform(tt_rng *r, real *out, int64_t n, real lo, real hi);
void tt_rng_normal(tt_rng *r, real *out, int64_t n, real mean, real std);
/* out[i] = 1 with probability p, else 0. */
void tt_rng_bernoulli(tt_rng *r, real *out, int64_t n, real p);

/* Uniform for element e of a draw that started at cursor `at` (see tt_rng_take). */
real tt_rng_uniform_at(const tt_rng *at, int64_t e);
/* Uniforms of elements 4j .. 4j+3 of a draw that started at `at` (a cursor from tt_rng_take,
 * so its counter is a multiple of 4): one Philox block for four elements, the same values as
 * tt_rng_uniform_at gives one at a time. */
void tt_rng_uniform4_at(const tt_rng *at, int64_t j, real out[4]);
/* Dropout keep masks 32 elements (8 Philox blocks) at a time: AVX2 where the CPU has it, 16
 * blocks side by side, else one block at a time. */
#define TT_RNG_LANES 8
/* keep[e] = tt_philox_keep(word, thr), 1 or 0, for the 32 * n32 elements from 4j on. With
 * thr = tt_philox_keep_threshold(p) this is exactly uniform >= p: a keep mask without a float. */
void tt_rng_keep_at(const tt_rng *at, int64_t j, uint32_t thr, int64_t n32, uint8_t *keep);
/* Standard normal for element e of a draw that started at `at` (Box-Muller on word pairs). */
real tt_rng_normal_at(const tt_rng *at, int64_t e);

#ifdef __cplusplus
}
#endif

#endif
