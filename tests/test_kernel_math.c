/* test_kernel_math.c: the host side of the math the CPU and CUDA kernels share
 * (tensor/kernel_math.h). Each function, called element by element as a device thread calls
 * it, gives exactly the CPU table's bits (memcmp, not a tolerance) on random inputs at sizes
 * that use one thread and several; GELU (float64: float32 has its own erf, tests/test_gelu.c)
 * and the optimizers also against the CPU loops' former expressions written out longhand, so
 * moving them into the header changed no bit; the keep bits of tt_dropout_keep4 equal
 * tt_cpu_keep_mask's and the contract uniform(at, i) >= p. */
#include "kernel_ref.h"

#include "tensor/cpu/cpu.h"
#include "tensor/kernel_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* one thread for the small size; several (TT_CPU_GRAIN is 16384) for the large one */
static const int64_t MATH_SIZES[] = {7, 100003};
#define NMATH 2

/* Fails with the label, the first index whose bits differ and both values. */
static void check_same_bits(const char *what, const real *got, const real *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(real)) != 0)
            ck_abort_msg("%s n=%lld: index %lld differs: got %.17g, want %.17g", what, (long long)n,
                         (long long)i, (double)got[i], (double)want[i]);
}

START_TEST(test_gelu_shared)
{
    for (int s = 0; s < NMATH; s++) {
        int64_t n = MATH_SIZES[s];
        real *x = randu(n, 500, -9, 9), *dy = randn(n, 501);
        real *cpu = tt_test_alloc(n), *dcpu = randn(n, 502);
        real *mine = tt_test_alloc(n), *dmine = dup_real(dcpu, n);
        real *hand = tt_test_alloc(n), *dhand = dup_real(dcpu, n);
        tt_cpu_backend.gelu_forward(cpu, x, n);
        tt_cpu_backend.gelu_backward(dcpu, x, dy, n);
        for (int64_t i = 0; i < n; i++) {
            mine[i] = tt_gelu_value(x[i]);
            dmine[i] += dy[i] * tt_gelu_deriv(x[i]);
            /* cpu/activation.c's loops before kernel_math.h */
            real cdf = R(0.5) * (R(1) + R_ERF(x[i] * R(0.70710678118654752440)));
            real pdf = R(0.39894228040143267794) * R_EXP(R(-0.5) * x[i] * x[i]);
            hand[i] = R(0.5) * x[i] * (R(1) + R_ERF(x[i] * R(0.70710678118654752440)));
            dhand[i] += dy[i] * (cdf + x[i] * pdf);
        }
        check_same_bits("gelu: kernel_math vs the CPU table", mine, cpu, n);
        check_same_bits("gelu backward: kernel_math vs the CPU table", dmine, dcpu, n);
#ifdef TT_DOUBLE /* float32 has its own erf since (tensor/erf_f32.h, tests/test_gelu.c) */
        check_same_bits("gelu: longhand vs the CPU table", hand, cpu, n);
        check_same_bits("gelu backward: longhand vs the CPU table", dhand, dcpu, n);
#endif
        free_all(x, dy, cpu, dcpu, mine, dmine, hand, dhand);
    }
}
END_TEST

/* three steps of AdamW with torch-like scalars (bias corrections of steps 1..3, weight decay) */
START_TEST(test_adamw_shared)
{
    for (int s = 0; s < NMATH; s++) {
        int64_t n = MATH_SIZES[s];
        real *p = randn(n, 510), *m = tt_test_alloc(n), *v = tt_test_alloc(n);
        memset(m, 0, (size_t)n * sizeof(real));
        memset(v, 0, (size_t)n * sizeof(real));
        real *p2 = dup_real(p, n), *m2 = dup_real(m, n), *v2 = dup_real(v, n);
        real *p3 = dup_real(p, n), *m3 = dup_real(m, n), *v3 = dup_real(v, n);
        for (int t = 1; t <= 3; t++) {
            real *g = randn(n, 520 + (uint64_t)t);
            double lr = 3e-3, b1 = 0.9, b2 = 0.999, bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
            tt_adamw_scalars sc = {.decay = (real)(1 - lr * 0.01),
                                   .b1 = (real)b1,
                                   .a1 = (real)(1 - b1),
                                   .b2 = (real)b2,
                                   .a2 = (real)(1 - b2),
                                   .step = (real)(lr / bc1),
                                   .bc2_sqrt = (real)sqrt(bc2),
                                   .eps = R(1e-8)};
            tt_cpu_backend.adamw_step(p, m, v, g, &sc, NULL, n);
            for (int64_t i = 0; i < n; i++) {
                tt_adamw_update(&p2[i], &m2[i], &v2[i], g[i], &sc);
                /* cpu/optimizer.c's loop before kernel_math.h */
                p3[i] = p3[i] * sc.decay;
                m3[i] = m3[i] * sc.b1 + sc.a1 * g[i];
                v3[i] = v3[i] * sc.b2 + sc.a2 * g[i] * g[i];
                p3[i] = p3[i] + -sc.step * m3[i] / (R_SQRT(v3[i]) / sc.bc2_sqrt + sc.eps);
            }
            free(g);
        }
        check_same_bits("adamw p: kernel_math vs the CPU table", p2, p, n);
        check_same_bits("adamw m: kernel_math vs the CPU table", m2, m, n);
        check_same_bits("adamw v: kernel_math vs the CPU table", v2, v, n);
        check_same_bits("adamw p: longhand vs the CPU table", p3, p, n);
        check_same_bits("adamw v: longhand vs the CPU table", v3, v, n);
        free_all(p, m, v, p2, m2, v2, p3, m3, v3);
    }
}
END_TEST

/* two steps of SGD for each of: weight decay or not, x momentum or not */
START_TEST(test_sgd_shared)
{
    for (int s = 0; s < NMATH; s++)
        for (int variant = 0; variant < 4; variant++) {
            int64_t n = MATH_SIZES[s];
            bool wd = variant & 1, mom = variant & 2;
            real *p = randn(n, 530), *buf = randn(n, 531);
            real *p2 = dup_real(p, n), *buf2 = dup_real(buf, n);
            real *p3 = dup_real(p, n), *buf3 = dup_real(buf, n);
            for (int t = 1; t <= 2; t++) {
                real *g = randn(n, 540 + (uint64_t)t);
                tt_sgd_scalars sc = {.wd = wd ? R(0.05) : R(0),
                                     .mu = mom ? R(0.9) : R(0),
                                     .neg_lr = R(-0.1),
                                     .first = t == 1,
                                     .use_buf = mom};
                tt_cpu_backend.sgd_step(p, buf, g, &sc, NULL, n);
                for (int64_t i = 0; i < n; i++) {
                    tt_sgd_update(&p2[i], &buf2[i], g[i], &sc);
                    /* cpu/optimizer.c's loop before kernel_math.h */
                    real d = g[i];
                    if (sc.wd != R(0)) d = d + sc.wd * p3[i];
                    if (sc.use_buf) {
                        buf3[i] = sc.first ? d : buf3[i] * sc.mu + d;
                        d = buf3[i];
                    }
                    p3[i] = p3[i] + sc.neg_lr * d;
                }
                free(g);
            }
            check_same_bits(label("sgd p (wd %d, momentum %d): kernel_math", wd, mom), p2, p, n);
            check_same_bits(label("sgd buf (wd %d, momentum %d): kernel_math", wd, mom), buf2, buf,
                            n);
            check_same_bits(label("sgd p (wd %d, momentum %d): longhand", wd, mom), p3, p, n);
            check_same_bits(label("sgd buf (wd %d, momentum %d): longhand", wd, mom), buf3, buf, n);
            free_all(p, buf, p2, buf2, p3, buf3);
        }
}
END_TEST

/* Element i of a draw at a cursor from tt_rng_take: tt_dropout_keep4's bit i % 4 of block
 * i / 4, as the CUDA kernels take it, equals the CPU's mask and uniform(at, i) >= p, for odd
 * sizes, for cursors past the first block and inside one (a rank's share of a draw, dist.h),
 * and for thresholds at the ends and in between. */
START_TEST(test_dropout_keep4_shared)
{
    static const int64_t ns[] = {1, 5, 31, 33, 1027, 100003};
    static const double ps[] = {0.0, 1.0 / 16777216.0, 0.1, 0.5, 0.9, 0.999999};
    tt_rng r;
    tt_rng_init(&r, 0x1234567887654321ull, 7);
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof ps / sizeof ps[0]; b++) {
            int64_t n = ns[a];
            real p = (real)ps[b];
            (void)tt_rng_take(&r, 3 + (int64_t)a); /* so the draws start at varied counters */
            const tt_rng draw = tt_rng_take(&r, n);
            uint32_t thr = tt_philox_keep_threshold((double)p);
            uint8_t *cpu = tt_xmalloc((size_t)n);
            /* shift 0: the draw; 1..3: a data-parallel share starting inside a block */
            for (int shift = 0; shift < 4; shift++) {
                tt_rng at = draw;
                at.counter += (uint64_t)shift;
                tt_cpu_keep_mask(cpu, &at, 0, n, p);
                for (int64_t j = 0; 4 * j < n; j++) {
                    unsigned bits = tt_dropout_keep4(&at, j, thr);
                    for (int k = 0; k < 4 && 4 * j + k < n; k++) {
                        int64_t i = 4 * j + k;
                        int mine = bits >> k & 1u, want = tt_rng_uniform_at(&at, i) >= p;
                        TT_CHECK(mine == cpu[i] && mine == want,
                                 "keep4 n=%lld p=%g counter=%llu: element %lld: kernel_math "
                                 "%d, tt_cpu_keep_mask %d, uniform >= p %d", (long long)n,
                                 (double)p, (unsigned long long)at.counter, (long long)i, mine,
                                 cpu[i], want);
                    }
                }
            }
            free(cpu);
        }
}
END_TEST

Suite *kernel_math_suite(void)
{
    Suite *s = suite_create("kernel_math");
    TCase *tc = new_tcase(s, "shared with the device");
    tcase_add_test(tc, test_gelu_shared);
    tcase_add_test(tc, test_adamw_shared);
    tcase_add_test(tc, test_sgd_shared);
    tcase_add_test(tc, test_dropout_keep4_shared);
    return s;
}
