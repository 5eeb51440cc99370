/* erf_f32.h: erf, GELU and GELU's derivative in float32 as branch-free element functions, so
 * that a loop over them vectorises under the Makefile's strict flags (selects, no tables, no
 * libm call; libm's scalar erff was a fifth of a GELU model's step). The CPU's float32 GELU
 * kernels use them (tensor/kernel_math.h); float64 builds and CUDA devices keep erf/erff.
 *
 *   |z| < 1       erf(z) = z + z P(z^2)                          (P: degree 6, minimax)
 *   t >= 0.7      Phi(-t) = (1 + F(q)) exp(-t^2/2) / (2 + 4t),  q = (t - 3) / (t + 3)
 *                 (F: degree 9 over t in [0.7, 14.5], minimax in relative error); erfc(a) is
 *                 2 Phi(-a sqrt 2), and GELU takes t = |x| itself, no rounded x / sqrt 2
 *   exp(-u^2/2)   u^2 = uh^2 + (u - uh)(u + uh) with uh = u's 12 leading bits, so uh^2 is
 *                 exact; then exp by k ln2 + r and a degree-6 polynomial of r
 * GELU's Phi(x) comes from the tail form wherever 1 + erf(x / sqrt 2) would cancel (x < -0.7),
 * so GELU keeps its relative accuracy down to where it underflows (about -14), unlike 1 + erff
 * (PyTorch's form, whose absolute error, an ulp of 1, is all of GELU below x = -5.5). Measured
 * against double precision over every float (tests/test_gelu.c samples them): erf within 1.45
 * ulp (of [0, 4.5]; erf is odd), GELU within 4.75 ulp of the exact x Phi(x) (of [-16, 12];
 * under 1 ulp for 99% of the floats), GELU' within 1.5e-7 absolute (it crosses 0 at -0.75).
 * +-0 -> +-0, erf(+-inf) = +-1, gelu(inf) = inf; gelu(-inf) and gelu'(+-inf) are NaN as the erf
 * form gives them (inf * 0), NaN gives NaN. The same expressions with or without AVX2: no FMA
 * is asked for (ISO C mode leaves a * b + c uncontracted), so every path gives one answer. */
#ifndef TT_ERF_F32_H
#define TT_ERF_F32_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* inlined into the caller's loop even when large, or the loop does not vectorise */
#if defined(__GNUC__)
#define TT_F32_INLINE static inline __attribute__((always_inline))
#else
#define TT_F32_INLINE static inline
#endif

TT_F32_INLINE uint32_t tt_f32_bits(float f)
{
    union {
        float f;
        uint32_t u;
    } b;
    b.f = f;
    return b.u;
}

TT_F32_INLINE float tt_f32_from_bits(uint32_t u)
{
    union {
        uint32_t u;
        float f;
    } b;
    b.u = u;
    return b.f;
}

/* exp(-u^2 / 2) for u >= 0 (also +inf, NaN: treated as 14.5), within 1.2 ulp wherever the
 * result is normal; subnormal results come from two exact power-of-two scalings, rounded once;
 * 0 from u > 14.5. */
TT_F32_INLINE float tt_f32_exp_neg_half_sq(float u)
{
    const float log2e = 1.44269504088896341f, round = 12582912.0f; /* 1.5 * 2^23 */
    const float ln2_hi = 0.693145751953125f, ln2_lo = 1.42860682030941723e-6f; /* hi: 16 bits */
    float uc = u < 14.5f ? u : 14.5f;
    float uh = tt_f32_from_bits(tt_f32_bits(uc) & 0xfffff000u);
    float hi = uh * uh * 0.5f;               /* exact: 12 bits squared, halved */
    float lo = (uc - uh) * (uc + uh) * 0.5f; /* the rest of u^2 / 2, below 2^-10 of it */
    float kf = ((hi + lo) * -log2e + round) - round; /* -round(u^2 / 2 / ln2), in [-152, 0] */
    float r = ((-hi - kf * ln2_hi) - kf * ln2_lo) - lo; /* -hi - kf ln2_hi is exact */
    float p = 0x1.6a2448p-10f;                          /* exp(r) = 1 + r + r^2 p(r) */
    p = p * r + 0x1.1239d6p-7f;
    p = p * r + 0x1.5558f2p-5f;
    p = p * r + 0x1.555492p-3f;
    p = p * r + 0x1.fffffcp-2f;
    p = p * (r * r) + r + 1.0f;
    int32_t k = (int32_t)kf, k1 = k / 2, k2 = k - k1; /* 2^k = 2^k1 2^k2, both normal */
    return p * tt_f32_from_bits((uint32_t)(k1 + 127) << 23) *
           tt_f32_from_bits((uint32_t)(k2 + 127) << 23);
}

/* t clamped to [0.7, 14.5], the range the tail's polynomial was fitted over */
TT_F32_INLINE float tt_f32_tail_arg(float t)
{
    float tc = t > 0.7f ? t : 0.7f;
    return tc < 14.5f ? tc : 14.5f;
}

/* 1 + F(q) = (1 + 2t) exp(t^2 / 2) erfc(t / sqrt 2), q = (t - 3) / (t + 3): the numerator of
 * Phi(-t) = (1 + F) exp(-t^2 / 2) / (2 + 4t) */
TT_F32_INLINE float tt_f32_phi_num(float t)
{
    float tc = tt_f32_tail_arg(t);
    float q = (tc - 3.0f) / (tc + 3.0f);
    float p = 0x1.4a92d2p-14f;
    p = p * q + -0x1.fccda8p-10f;
    p = p * q + -0x1.a86422p-11f;
    p = p * q + 0x1.c6df06p-7f;
    p = p * q + -0x1.2d609ep-10f;
    p = p * q + -0x1.a690d4p-4f;
    p = p * q + 0x1.17a27ap-2f;
    p = p * q + -0x1.3fac04p-2f;
    p = p * q + 0x1.b56c84p-6f;
    p = p * q + 0x1.670312p-1f;
    return 1.0f + p;
}

/* erf(z) for |z| < 1; z + z P keeps the leading term exact (2/sqrt(pi) = 1 + 0.128...) */
TT_F32_INLINE float tt_f32_erf_small(float z)
{
    float s = z * z;
    float p = 0x1.496a32p-14f;
    p = p * s + -0x1.a3f7p-11f;
    p = p * s + 0x1.5405b2p-8f;
    p = p * s + -0x1.b7f90ep-6f;
    p = p * s + 0x1.ce2cf8p-4f;
    p = p * s + -0x1.81273ep-2f;
    p = p * s + 0x1.06eba8p-3f;
    return z + z * p;
}

/* erf(z) = 1 - erfc(|z|) (signed) beyond |z| = 1, erfc(a) = 2 Phi(-a sqrt 2) */
TT_F32_INLINE float tt_erf_f32(float z)
{
    float a = z < 0.0f ? -z : z;
    float t = a * 1.41421356237309504880f;
    float erfc = (tt_f32_phi_num(t) * tt_f32_exp_neg_half_sq(t)) /
                 (1.0f + 2.0f * tt_f32_tail_arg(t));
    float big = z < 0.0f ? erfc - 1.0f : 1.0f - erfc;
    return !(a >= 1.0f) ? tt_f32_erf_small(z) : big; /* NaN: the small form, NaN */
}

/* The polynomial erf serves Phi(x) = (1 + erf(x / sqrt 2)) / 2 on x in (-0.7, 1.4): 1 + erf
 * >= 0.48 there, so it does not cancel; outside, the tail form, in x itself. */
TT_F32_INLINE int tt_f32_gelu_small(float x)
{
    return x > -0.7f && x < 1.4f;
}

/* gelu(x) = x Phi(x). Outside the small range, with h = Phi(-|x|): x < 0 gives x h, computed
 * as (x (1 + F)) exp(-x^2/2) / (2 + 4|x|) so that nothing rounds twice that need not (and a
 * result near underflow is rounded once); x > 0 gives x (1 - h) (inf stays inf). */
TT_F32_INLINE float tt_gelu_f32(float x)
{
    float t = x < 0.0f ? -x : x;
    float s = x < 0.0f ? x : 1.0f;
    float sh = ((s * tt_f32_phi_num(t)) * tt_f32_exp_neg_half_sq(t)) /
               (2.0f + 4.0f * tt_f32_tail_arg(t));
    float tail = x < 0.0f ? sh : x * (1.0f - sh);
    float small = x * (0.5f + 0.5f * tt_f32_erf_small(x * 0.70710678118654752440f));
    return tt_f32_gelu_small(x) ? small : tail; /* NaN: the tail, x (1 - sh) = NaN */
}

/* gelu'(x) = Phi(x) + x phi(x), phi(x) = exp(-x^2/2) / sqrt(2 pi): one exp serves both */
TT_F32_INLINE float tt_gelu_deriv_f32(float x)
{
    float t = x < 0.0f ? -x : x;
    float e = tt_f32_exp_neg_half_sq(t);
    float h = (tt_f32_phi_num(t) * e) / (2.0f + 4.0f * tt_f32_tail_arg(t));
    float small = 0.5f + 0.5f * tt_f32_erf_small(x * 0.70710678118654752440f);
    float cdf = tt_f32_gelu_small(x) ? small : x < 0.0f ? h : 1.0f - h;
    return cdf + x * (0.39894228040143267794f * e);
}

#ifdef __cplusplus
}
#endif

#endif
