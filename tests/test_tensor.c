/* test_tensor.c: shapes, tensor views, the step arena and the counter-based RNG, with the
 * header-only Philox core (tensor/philox.h, what device kernels will call) against known answers
 * and against the CPU dropout masks. */
#include "testutil.h"

#include "tensor/cpu/cpu.h"
#include "tensor/philox.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_shape_helpers)
{
    tt_shape s = tt_shape3(2, 3, 5);
    char buf[TT_SHAPE_STR];
    ck_assert_int_eq(s.ndim, 3);
    ck_assert_int_eq(tt_shape_numel(s), 30);
    ck_assert_int_eq(tt_shape_numel(tt_shape1(0)), 0);
    ck_assert(tt_shape_eq(s, tt_shape3(2, 3, 5)));
    ck_assert(!tt_shape_eq(s, tt_shape3(2, 5, 3)));
    ck_assert(!tt_shape_eq(tt_shape2(6, 5), tt_shape3(2, 3, 5)));
    ck_assert_str_eq(tt_shape_str(s, buf), "[2,3,5]");
    ck_assert_str_eq(tt_shape_str(tt_shape4(1, 22, 333, 4444), buf), "[1,22,333,4444]");
}
END_TEST

START_TEST(test_tensor_view)
{
    real data[12];
    tt_tensor t = tt_tensor_view(data, tt_shape2(3, 4), TT_REAL, TT_CPU);
    ck_assert_int_eq(t.n, 12);
    ck_assert_uint_eq(tt_tensor_bytes(&t), 12 * sizeof(real));
    ck_assert_ptr_eq(tt_real(&t), data);
    int32_t ids[5];
    tt_tensor it = tt_tensor_view(ids, tt_shape1(5), TT_I32, TT_CPU);
    ck_assert_uint_eq(tt_tensor_bytes(&it), 5 * sizeof(int32_t));
    ck_assert_ptr_eq(tt_i32(&it), ids);
}
END_TEST

START_TEST(test_tensor_wrong_dtype_aborts)
{
    int32_t ids[2];
    tt_tensor it = tt_tensor_view(ids, tt_shape1(2), TT_I32, TT_CPU);
    tt_expect_abort("int32", "real", NULL);
    tt_real(&it);
}
END_TEST

START_TEST(test_same_shape_abort_names_both)
{
    tt_expect_abort("myop", "[2,3]", "[3,2]");
    tt_assert_same_shape(tt_shape2(2, 3), tt_shape2(3, 2), "myop");
}
END_TEST

START_TEST(test_arena_alignment_and_reuse)
{
    tt_arena a;
    tt_arena_init(&a, "test", TT_CPU, 4096);
    char *p1 = tt_arena_alloc(&a, 3);
    char *p2 = tt_arena_alloc(&a, 100);
    ck_assert_uint_eq((uintptr_t)p1 % TT_ARENA_ALIGN, 0);
    ck_assert_uint_eq((uintptr_t)p2 % TT_ARENA_ALIGN, 0);
    ck_assert(p2 >= p1 + 3);
    memset(p2, 0xab, 100); /* the memory is usable (ASan would flag otherwise) */
    size_t used = a.used;
    ck_assert_uint_eq(a.high, used);
    tt_arena_reset(&a);
    ck_assert_uint_eq(a.used, 0);
    ck_assert_uint_eq(a.high, used); /* the high-water mark survives the reset */
    ck_assert_ptr_eq(tt_arena_alloc(&a, 3), p1);
    tt_tensor t = tt_arena_tensor(&a, tt_shape2(7, 9), TT_REAL);
    ck_assert_int_eq(t.n, 63);
    ck_assert_uint_eq((uintptr_t)t.data % TT_ARENA_ALIGN, 0);
    tt_arena_free(&a);
}
END_TEST

START_TEST(test_arena_exact_fit)
{
    tt_arena a;
    tt_arena_init(&a, "fit", TT_CPU, 256);
    tt_arena_alloc(&a, 128);
    tt_arena_alloc(&a, 128); /* ends exactly at the capacity */
    ck_assert_uint_eq(a.used, 256);
    tt_arena_free(&a);
}
END_TEST

START_TEST(test_arena_overflow_aborts_with_sizes)
{
    static tt_arena a; /* static: the forked child aborts before it could free it */
    tt_arena_init(&a, "step-arena", TT_CPU, 1024);
    tt_arena_alloc(&a, 1000);
    tt_expect_abort("step-arena", "asked for 2000 bytes", "HINT");
    tt_arena_alloc(&a, 2000);
}
END_TEST

/* Known-answer vectors of Philox4x32-10 (Random123's kat_vectors). */
START_TEST(test_philox_known_answers)
{
    static const struct {
        uint32_t ctr[4], key[2], out[4];
    } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
         {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
         {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        uint32_t out[4];
        tt_philox4x32(kat[i].key, kat[i].ctr, out);
        for (int j = 0; j < 4; j++)
            ck_assert_msg(out[j] == kat[i].out[j], "vector %zu word %d: got %08x want %08x", i, j,
                          out[j], kat[i].out[j]);
    }
}
END_TEST

/* The same vectors through the core's key schedule: seed is the key, the block index the low
 * counter words, the stream the high ones; and word by word for a block index below 2^62. */
START_TEST(test_philox_core_known_answers)
{
    static const struct {
        uint64_t seed, stream, b;
        uint32_t out[4];
    } kat[] = {
        {0, 0, 0, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {~0ull, ~0ull, ~0ull, {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull,
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        uint32_t out[4];
        tt_philox_block(kat[i].seed, kat[i].stream, kat[i].b, out);
        for (int j = 0; j < 4; j++)
            ck_assert_msg(out[j] == kat[i].out[j], "vector %zu word %d: got %08x want %08x", i, j,
                          out[j], kat[i].out[j]);
    }
    for (int j = 0; j < 4; j++) ck_assert_uint_eq(tt_philox_word(0, 0, (uint64_t)j), kat[0].out[j]);
    /* ten rounds by hand, the key bumped by the Weyl constants between them */
    uint32_t c[4] = {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344};
    uint32_t k0 = 0xa4093822, k1 = 0x299f31d0;
    for (int round = 0; round < 10; round++, k0 += TT_PHILOX_W0, k1 += TT_PHILOX_W1)
        tt_philox_round(c, k0, k1);
    ck_assert(memcmp(c, kat[2].out, sizeof c) == 0);
    /* the host API is the core: words, and uniforms of their top 24 bits */
    for (uint64_t e = 0; e < 4096; e += 37) {
        uint32_t w = tt_philox_word(7, 3, e + (1ull << 33));
        ck_assert_uint_eq(tt_rng_word(7, 3, e + (1ull << 33)), w);
        ck_assert(tt_rng_word_uniform(w) == (real)((double)(w >> 8) / 16777216.0));
    }
}
END_TEST

/* The uniform's ends, and the keep threshold: ceil(p 2^24) without libm, so that
 * keep(w, threshold(p)) is uniform(w) >= p for every 24-bit value, float and double p alike. */
START_TEST(test_philox_core_uniform_and_threshold)
{
    ck_assert(tt_philox_uniform(0) == 0.0);
    ck_assert(tt_philox_uniform(0xff) == 0.0); /* the low 8 bits are dropped */
    ck_assert(tt_philox_uniform(0x100) == 1.0 / 16777216.0);
    ck_assert(tt_philox_uniform(0xffffffffu) == 1.0 - 1.0 / 16777216.0);
    ck_assert(tt_philox_uniform_pos(0) == 1.0 / 16777216.0);
    ck_assert(tt_philox_uniform_pos(0xffffffffu) == 1.0);
    const double eps24 = 1.0 / 16777216.0;
    const struct {
        double p;
        uint32_t thr;
    } cases[] = {{-0.5, 0},
                 {0, 0},
                 {1e-30, 1},
                 {eps24, 1},
                 {eps24 * 1.5, 2},
                 {0.5, 1u << 23},
                 {0.5 + eps24 / 4, (1u << 23) + 1},
                 {(double)0.3f, (uint32_t)ceil((double)0.3f * 16777216.0)},
                 {1.0 - eps24, (1u << 24) - 1},
                 {1.0, 1u << 24},
                 {2.0, (1u << 24) + 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(tt_philox_keep_threshold(cases[i].p) == cases[i].thr,
                      "p %.17g: got %u want %u", cases[i].p, tt_philox_keep_threshold(cases[i].p),
                      cases[i].thr);
    const double ps[] = {0.1, (double)0.1f, 0.3, (double)0.3f, 0.5, 1.0 / 3, (double)(1.0f / 3)};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        uint32_t thr = tt_philox_keep_threshold(ps[i]);
        for (uint32_t bits = thr - 3; bits <= thr + 3; bits++) {
            uint32_t w = (bits << 8) | 0xa5;
            ck_assert_int_eq(tt_philox_keep(w, thr), tt_philox_uniform(w) >= ps[i]);
        }
    }
}
END_TEST

/* The core's keep bits, one element at a time as a device thread computes them, equal the CPU
 * dropout masks (AVX2 blocks between a scalar head and tail) for a few (seed, stream, counter),
 * and tt_cpu_keep_mask from odd first elements. */
START_TEST(test_philox_core_keep_equals_cpu_masks)
{
    enum { N = 1003 };
    const uint64_t seeds[] = {0, 42, 0x0123456789abcdefull}, streams[] = {1, 5, 1ull << 40};
    const int64_t skips[] = {0, 1000, 0xfffffffcll};
    const real ps[] = {R(0.1), R(0.3), R(0.5)};
    real *x = tt_test_alloc(N), *y = tt_test_alloc(N);
    uint8_t mask[N];
    tt_test_normal(x, N, 3);
    for (int s = 0; s < 3; s++) {
        tt_rng r;
        tt_rng_init(&r, seeds[s], streams[s]);
        tt_rng_take(&r, skips[s]);
        tt_rng at = tt_rng_take(&r, N);
        uint32_t thr = tt_philox_keep_threshold((double)ps[s]);
        tt_cpu_dropout_forward(y, mask, x, ps[s], at, N);
        for (int64_t e = 0; e < N; e++) {
            uint32_t w = tt_philox_word(at.seed, at.stream, at.counter + (uint64_t)e);
            TT_CHECK(mask[e] == tt_philox_keep(w, thr), "seed %d element %lld", s,
                     (long long)e);
        }
        for (int64_t first = 1; first < 40; first += 7) {
            tt_cpu_keep_mask(mask, &at, first, N - first, ps[s]);
            for (int64_t e = 0; e < N - first; e++) {
                uint32_t w = tt_philox_word(at.seed, at.stream, at.counter + (uint64_t)(first + e));
                TT_CHECK(mask[e] == tt_philox_keep(w, thr), "seed %d first %lld element %lld",
                         s, (long long)first, (long long)e);
            }
        }
    }
    free(x), free(y);
}
END_TEST

START_TEST(test_rng_deterministic_and_keyed)
{
    enum { N = 1001 };
    real *a = tt_test_alloc(N), *b = tt_test_alloc(N), *c = tt_test_alloc(N), *d = tt_test_alloc(N);
    tt_rng r1, r2, r3, r4;
    tt_rng_init(&r1, 42, 0);
    tt_rng_init(&r2, 42, 0);
    tt_rng_init(&r3, 43, 0);
    tt_rng_init(&r4, 42, 1);
    tt_rng_uniform(&r1, a, N, R(0), R(1));
    tt_rng_uniform(&r2, b, N, R(0), R(1));
    tt_rng_uniform(&r3, c, N, R(0), R(1));
    tt_rng_uniform(&r4, d, N, R(0), R(1));
    ck_assert_mem_eq(a, b, N * sizeof(real));
    int same_seed = 0, same_stream = 0;
    for (int i = 0; i < N; i++) {
        same_seed += a[i] == c[i];
        same_stream += a[i] == d[i];
    }
    ck_assert_int_lt(same_seed, 5);
    ck_assert_int_lt(same_stream, 5);
    /* the cursor advanced by N rounded up to a multiple of 4 */
    ck_assert_uint_eq(r1.counter, 1004);
    /* the next draw continues the sequence instead of repeating it */
    tt_rng_uniform(&r1, b, N, R(0), R(1));
    ck_assert(memcmp(a, b, N * sizeof(real)) != 0);
    free(a), free(b), free(c), free(d);
}
END_TEST

/* Counter-based: element e depends only on (seed, stream, counter + e). Filling in chunks, in
 * any order, as threads would, gives the same array as one pass. */
START_TEST(test_rng_independent_of_split)
{
    enum { N = 4099 };
    real *whole = tt_test_alloc(N), *parts = tt_test_alloc(N);
    tt_rng r;
    tt_rng_init(&r, 7, 3);
    tt_rng_take(&r, 8); /* start somewhere other than 0 */
    tt_rng at = r;
    tt_rng_normal(&r, whole, N, R(0), R(1));
    const int cuts[] = {0, 1, 2, 1000, 1001, 3333, N};
    for (int k = 5; k >= 0; k--) /* chunks in reverse order */
        for (int e = cuts[k]; e < cuts[k + 1]; e++) parts[e] = tt_rng_normal_at(&at, e);
    ck_assert_mem_eq(whole, parts, N * sizeof(real));
    free(whole), free(parts);
}
END_TEST

static void moments(const real *x, int n, double *mean, double *var)
{
    double s = 0, s2 = 0;
    for (int i = 0; i < n; i++) s += (double)x[i];
    *mean = s / n;
    for (int i = 0; i < n; i++) s2 += ((double)x[i] - *mean) * ((double)x[i] - *mean);
    *var = s2 / (n - 1);
}

START_TEST(test_rng_distributions)
{
    enum { N = 200000 };
    real *x = tt_test_alloc(N);
    double mean, var;
    tt_rng r;
    tt_rng_init(&r, 2024, 0);

    tt_rng_uniform(&r, x, N, R(-1), R(3));
    moments(x, N, &mean, &var);
    for (int i = 0; i < N; i++)
        TT_CHECK(x[i] >= R(-1) && x[i] < R(3), "uniform [-1, 3): x[%d] = %g", i, (double)x[i]);
    ck_assert_double_eq_tol(mean, 1.0, 0.02);         /* sd of the mean: 0.0026 */
    ck_assert_double_eq_tol(var, 16.0 / 12.0, 0.02);

    tt_rng_normal(&r, x, N, R(2), R(0.5));
    moments(x, N, &mean, &var);
    ck_assert_double_eq_tol(mean, 2.0, 0.006);        /* sd of the mean: 0.0011 */
    ck_assert_double_eq_tol(var, 0.25, 0.005);        /* sd of the variance: 0.0008 */
    int beyond3 = 0;
    for (int i = 0; i < N; i++) beyond3 += fabs((double)x[i] - 2.0) > 1.5;
    ck_assert_int_gt(beyond3, 400); /* 0.27% of N = 540 in a true normal */
    ck_assert_int_lt(beyond3, 700);

    tt_rng_bernoulli(&r, x, N, R(0.3));
    moments(x, N, &mean, &var);
    for (int i = 0; i < N; i++) ck_assert(x[i] == R(0) || x[i] == R(1));
    ck_assert_double_eq_tol(mean, 0.3, 0.006);        /* sd: 0.001 */
    free(x);
}
END_TEST

Suite *tensor_suite(void)
{
    Suite *s = suite_create("tensor");
    TCase *tc = tcase_create("tensor");
    tcase_add_test(tc, test_shape_helpers);
    tcase_add_test(tc, test_tensor_view);
    tcase_add_test_raise_signal(tc, test_tensor_wrong_dtype_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_same_shape_abort_names_both, SIGABRT);
    suite_add_tcase(s, tc);

    tc = tcase_create("arena");
    tcase_add_test(tc, test_arena_alignment_and_reuse);
    tcase_add_test(tc, test_arena_exact_fit);
    tcase_add_test_raise_signal(tc, test_arena_overflow_aborts_with_sizes, SIGABRT);
    suite_add_tcase(s, tc);

    tc = tcase_create("rng");
    tcase_add_test(tc, test_philox_known_answers);
    tcase_add_test(tc, test_philox_core_known_answers);
    tcase_add_test(tc, test_philox_core_uniform_and_threshold);
    tcase_add_test(tc, test_philox_core_keep_equals_cpu_masks);
    tcase_add_test(tc, test_rng_deterministic_and_keyed);
    tcase_add_test(tc, test_rng_independent_of_split);
    tcase_add_test(tc, test_rng_distributions);
    suite_add_tcase(s, tc);
    return s;
}
