/* test_gemm.c: the backend's batched strided gemm against a naive loop (all transposes,
 * alpha/beta, padded leading dims, strides, shared operands, attention heads read in place),
 * and the backend's memory functions. Conventions: kernel_ref.h. */
#include "kernel_ref.h"

#include "tensor/cpu/cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- gemm --------------------------------------------------------------------------------- */

typedef struct {
    bool ta, tb;
    int M, N, K, lda, ldb, ldc; /* ld 0 means the minimum */
    int64_t sA, sB, sC;
    int batch; /* 0 means 1 */
    real alpha, beta;
} gemm_case;

/* Elements spanned by `batch` matrices of rows x cols at leading dimension ld: exactly what the
 * kernel may touch, so a buffer of this size lets ASan catch any access past it. */
static int64_t span(int64_t stride, int batch, int rows, int cols, int ld)
{
    return (int64_t)(batch - 1) * stride + (int64_t)(rows - 1) * ld + cols;
}

static int64_t span_A(const gemm_case *g)
{
    return span(g->sA, g->batch, g->ta ? g->K : g->M, g->ta ? g->M : g->K, g->lda);
}

static int64_t span_B(const gemm_case *g)
{
    return span(g->sB, g->batch, g->tb ? g->N : g->K, g->tb ? g->K : g->N, g->ldb);
}

static int64_t span_C(const gemm_case *g) { return span(g->sC, g->batch, g->M, g->N, g->ldc); }

static void ref_gemm(const gemm_case *g, const real *A, const real *B, real *C)
{
    for (int bi = 0; bi < g->batch; bi++) {
        const real *a = A + bi * g->sA, *b = B + bi * g->sB;
        real *c = C + bi * g->sC;
        for (int i = 0; i < g->M; i++)
            for (int j = 0; j < g->N; j++) {
                double acc = 0.0;
                for (int k = 0; k < g->K; k++) {
                    double x = (double)(g->ta ? a[k * g->lda + i] : a[i * g->lda + k]);
                    double y = (double)(g->tb ? b[j * g->ldb + k] : b[k * g->ldb + j]);
                    acc += x * y;
                }
                /* beta = 0 must not read C at all (BLAS semantics) */
                double old = g->beta == R(0) ? 0.0 : (double)g->beta * (double)c[i * g->ldc + j];
                c[i * g->ldc + j] = (real)((double)g->alpha * acc + old);
            }
    }
}

/* Runs the kernel and compares the whole span of C, so the gaps between rows (ldc > N) and
 * between batch entries must come back untouched. */
static void run_gemm(const char *what, const gemm_case *g, const real *A, const real *B, real *C)
{
    int64_t nC = span_C(g);
    real *want = dup_real(C, nC);
    ref_gemm(g, A, B, want);
    be->gemm(g->ta, g->tb, g->M, g->N, g->K, g->alpha, A, g->lda, g->sA, B, g->ldb, g->sB, g->beta,
             C, g->ldc, g->sC, g->batch);
    /* a shared C (sC = 0) sums the products of the whole batch */
    double tol = tol_sum((int64_t)g->K * (g->sC == 0 ? g->batch : 1));
    ck_assert_close(label("gemm %s: ta=%d tb=%d M=%d N=%d K=%d lda=%d ldb=%d ldc=%d sA=%lld "
                          "sB=%lld sC=%lld batch=%d alpha=%g beta=%g",
                          what, g->ta, g->tb, g->M, g->N, g->K, g->lda, g->ldb, g->ldc,
                          (long long)g->sA, (long long)g->sB, (long long)g->sC, g->batch,
                          (double)g->alpha, (double)g->beta),
                    C, want, nC, tol, tol);
    free(want);
}

/* Random A and B; C holds finite junk, so beta = 0 must overwrite it, not scale it. */
static void check_gemm(const char *what, gemm_case g, uint64_t seed)
{
    if (!g.batch) g.batch = 1;
    if (!g.lda) g.lda = g.ta ? g.M : g.K;
    if (!g.ldb) g.ldb = g.tb ? g.K : g.N;
    if (!g.ldc) g.ldc = g.N;
    real *A = randn(span_A(&g), seed);
    real *B = randn(span_B(&g), seed + 1);
    real *C = randu(span_C(&g), seed + 2, -3, 3);
    run_gemm(what, &g, A, B, C);
    free_all(A, B, C);
}

/* (M, N, K): each of them 1 somewhere, odd sizes, and K up to 257. */
static const int GEMM_SHAPES[][3] = {{1, 1, 1},     {1, 7, 3},     {7, 1, 5},     {3, 5, 1},
                                     {5, 3, 7},     {17, 33, 65},  {33, 17, 129}, {65, 129, 257},
                                     {1, 129, 257}, {129, 1, 33}};
#define NGEMM ((int)(sizeof GEMM_SHAPES / sizeof GEMM_SHAPES[0]))

/* The loop tests below run once per (ta, tb): _i = ta + 2 tb. */
static gemm_case gemm_shape(int i, int s, real alpha, real beta)
{
    return (gemm_case){.ta = i & 1, .tb = (i >> 1) & 1, .M = GEMM_SHAPES[s][0],
                       .N = GEMM_SHAPES[s][1], .K = GEMM_SHAPES[s][2], .alpha = alpha,
                       .beta = beta};
}

START_TEST(test_gemm_beta0_overwrites)
{
    for (int s = 0; s < NGEMM; s++) check_gemm("beta=0", gemm_shape(_i, s, R(0.75), R(0)), 10);
}
END_TEST

START_TEST(test_gemm_beta1_accumulates)
{
    for (int s = 0; s < NGEMM; s++) check_gemm("beta=1", gemm_shape(_i, s, R(-1.5), R(1)), 20);
}
END_TEST

START_TEST(test_gemm_general_beta)
{
    for (int s = 0; s < NGEMM; s++)
        check_gemm("beta=-0.5", gemm_shape(_i, s, R(0.5), R(-0.5)), 30);
}
END_TEST

START_TEST(test_gemm_leading_dims)
{
    /* sub-matrix views: every leading dimension exceeds the minimum */
    for (int s = 0; s < NGEMM; s++) {
        gemm_case g = gemm_shape(_i, s, R(1.25), R(1));
        g.lda = (g.ta ? g.M : g.K) + 5;
        g.ldb = (g.tb ? g.K : g.N) + 3;
        g.ldc = g.N + 7;
        check_gemm("padded ld", g, 40);
    }
}
END_TEST

START_TEST(test_gemm_batched_strides)
{
    /* gaps between the matrices of the batch must be skipped, not read or written */
    for (int s = 0; s < NGEMM; s++) {
        gemm_case g = gemm_shape(_i, s, R(0.75), R(0));
        g.batch = 5;
        g.sA = (int64_t)g.M * g.K + 3;
        g.sB = (int64_t)g.K * g.N + 1;
        g.sC = (int64_t)g.M * g.N + 2;
        check_gemm("batched", g, 50);
    }
}
END_TEST

START_TEST(test_gemm_batched_shared_b)
{
    for (int s = 0; s < NGEMM; s++) {
        gemm_case g = gemm_shape(_i, s, R(-0.5), R(1));
        g.batch = 4;
        g.sA = (int64_t)g.M * g.K;
        g.sB = 0;
        g.sC = (int64_t)g.M * g.N;
        check_gemm("shared B (sB=0)", g, 60);
    }
}
END_TEST

START_TEST(test_gemm_batched_shared_c_accumulates)
{
    /* a weight gradient summed over the batch: stride 0 on C with beta = 1 */
    for (int s = 0; s < NGEMM; s++) {
        gemm_case g = gemm_shape(_i, s, R(1), R(1));
        g.batch = 3;
        g.sA = (int64_t)g.M * g.K;
        g.sB = (int64_t)g.K * g.N;
        g.sC = 0;
        check_gemm("shared C (sC=0)", g, 70);
    }
}
END_TEST

START_TEST(test_gemm_attention_heads)
{
    /* qkv (T, 3d) packed as [q | k | v] with d = NH * HS. Head h reads columns h*HS.. of a part,
     * so every operand is a view with ld = 3d and the heads are a batch with stride HS. */
    const int T = 17, NH = 3, HS = 7, d = NH * HS;
    real *qkv = randn((int64_t)T * 3 * d, 80);
    real *att = randu((int64_t)NH * T * T, 81, -3, 3); /* (NH, T, T) */
    real *out = randu((int64_t)T * d, 82, -3, 3);       /* (T, d), heads side by side */
    real *datt = randn((int64_t)NH * T * T, 83);
    real *dqkv = randu((int64_t)T * 3 * d, 84, -3, 3);

    gemm_case scores = {.tb = true, .M = T, .N = T, .K = HS, .lda = 3 * d, .ldb = 3 * d,
                        .ldc = T, .sA = HS, .sB = HS, .sC = (int64_t)T * T, .batch = NH,
                        .alpha = R(1) / R_SQRT(R(HS)), .beta = R(0)};
    run_gemm("att = q k^T / sqrt(HS)", &scores, qkv, qkv + d, att);

    gemm_case mix = {.M = T, .N = HS, .K = T, .lda = T, .ldb = 3 * d, .ldc = d,
                     .sA = (int64_t)T * T, .sB = HS, .sC = HS, .batch = NH, .alpha = R(1),
                     .beta = R(0)};
    run_gemm("out = att v", &mix, att, qkv + 2 * d, out);

    /* backward into the k part of the packed gradient; q and v columns must stay untouched */
    gemm_case dk = {.ta = true, .M = T, .N = HS, .K = T, .lda = T, .ldb = 3 * d, .ldc = 3 * d,
                    .sA = (int64_t)T * T, .sB = HS, .sC = HS, .batch = NH, .alpha = R(0.5),
                    .beta = R(1)};
    run_gemm("dk += datt^T q", &dk, datt, qkv, dqkv + d);

    free_all(qkv, att, out, datt, dqkv);
}
END_TEST

START_TEST(test_gemm_large)
{
    gemm_case g = {.ta = _i & 1, .tb = (_i >> 1) & 1, .M = 200, .N = 301, .K = 511,
                   .alpha = R(0.25), .beta = R(1)};
    check_gemm("large", g, 90);
}
END_TEST

/* ---- memory ------------------------------------------------------------------------------- */

/* Each fills n elements of an n + 1 buffer; the last must keep its sentinel. */
START_TEST(test_fill)
{
    for (int s = 0; s < NSIZES; s++) {
        int64_t n = SIZES[s];
        real *x = randn(n + 1, 340), *want = dup_real(x, n + 1);
        for (int64_t i = 0; i < n; i++) want[i] = R(-2.5);
        be->fill(x, R(-2.5), n);
        ck_assert_close(label("fill n=%lld", (long long)n), x, want, n + 1, 0, 0);
        free_all(x, want);
    }
}
END_TEST

START_TEST(test_zero)
{
    for (int s = 0; s < NSIZES; s++) {
        int64_t n = SIZES[s];
        real *x = randn(n + 1, 350), *want = dup_real(x, n + 1);
        for (int64_t i = 0; i < n; i++) want[i] = R(0);
        be->zero(x, (size_t)n * sizeof(real));
        ck_assert_close(label("zero n=%lld", (long long)n), x, want, n + 1, 0, 0);
        free_all(x, want);
    }
}
END_TEST

START_TEST(test_copy)
{
    for (int s = 0; s < NSIZES; s++) {
        int64_t n = SIZES[s];
        real *src = randn(n, 360), *dst = randn(n + 1, 361), *want = dup_real(dst, n + 1);
        memcpy(want, src, (size_t)n * sizeof(real));
        be->copy(dst, src, (size_t)n * sizeof(real));
        ck_assert_close(label("copy n=%lld", (long long)n), dst, want, n + 1, 0, 0);
        free_all(src, dst, want);
    }
    /* a large copy split over two threads, and overlapping buffers (one piece, as memmove) */
    int before = be->get_threads();
    be->set_threads(2);
    const int64_t n = 1 << 20;
    real *src = randn(n + 7, 362), *dst = randn(n, 363), *want = dup_real(src, n + 7);
    be->copy(dst, src + 3, (size_t)n * sizeof(real));
    ck_assert_close("copy 4 MiB, 2 threads", dst, want + 3, n, 0, 0);
    be->copy(src + 5, src, (size_t)n * sizeof(real)); /* forward overlap */
    ck_assert_close("copy overlapping", src + 5, want, n, 0, 0);
    be->set_threads(before);
    free_all(src, dst, want);
}
END_TEST

START_TEST(test_alloc_host_round_trip)
{
    /* host -> device -> device -> host, on odd byte counts of reals */
    for (int s = 0; s < NSIZES; s++) {
        int64_t n = SIZES[s];
        size_t bytes = (size_t)n * sizeof(real);
        real *host = randn(n, 370), *back = tt_test_alloc(n);
        real *dev1 = be->alloc(bytes), *dev2 = be->alloc(bytes);
        be->from_host(dev1, host, bytes);
        be->copy(dev2, dev1, bytes);
        be->to_host(back, dev2, bytes);
        ck_assert_close(label("round trip n=%lld", (long long)n), back, host, n, 0, 0);
        be->free(dev1);
        be->free(dev2);
        free_all(host, back);
    }
}
END_TEST

START_TEST(test_threads)
{
    int before = be->get_threads();
    be->set_threads(1);
    ck_assert_int_eq(be->get_threads(), 1);
    be->set_threads(0); /* all cores */
    ck_assert_int_ge(be->get_threads(), 1);
    be->set_threads(before);
}
END_TEST

START_TEST(test_backend_get_cpu)
{
    ck_assert_msg(tt_backend_get(TT_CPU) == &tt_cpu_backend,
                  "tt_backend_get(TT_CPU) is not the CPU table");
    ck_assert_str_eq(tt_backend_get(TT_CPU)->name, "cpu");
}
END_TEST


/* One attention head's gemm (tt_cpu_head_gemm: its own AVX2 loops for small heads where the CPU
 * has them, else OpenBLAS): C = alpha op(A) op(B) (+ C) against the double loop, for the three
 * layouts attention uses, widths that are and are not multiples of 8, and past the size where
 * it hands over to OpenBLAS. */
START_TEST(test_head_gemm)
{
    const int dims[][3] = {{16, 16, 16}, {16, 8, 16}, {5, 24, 7}, {32, 32, 32}, {13, 12, 9},
                           {64, 64, 32}, {128, 128, 32}};
    const bool layouts[][2] = {{false, false}, {true, false}, {false, true}};
    for (int d = 0; d < (int)(sizeof dims / sizeof dims[0]); d++)
        for (int l = 0; l < 6; l++) {
            int M = dims[d][0], N = dims[d][1], K = dims[d][2];
            bool ta = layouts[l % 3][0], tb = layouts[l % 3][1], add = l < 3;
            int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2; /* strided */
            real *A = randn((int64_t)(ta ? K : M) * lda, 50);
            real *B = randn((int64_t)(tb ? N : K) * ldb, 51);
            real *C = randn((int64_t)M * ldc, 52), *want = dup_real(C, (int64_t)M * ldc);
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double sum = 0;
                    for (int k = 0; k < K; k++)
                        sum += (double)(ta ? A[(int64_t)k * lda + i] : A[(int64_t)i * lda + k]) *
                               (double)(tb ? B[(int64_t)j * ldb + k] : B[(int64_t)k * ldb + j]);
                    real *w = &want[(int64_t)i * ldc + j];
                    *w = (real)((add ? (double)*w : 0) + 0.75 * sum);
                    if (!add) C[(int64_t)i * ldc + j] = (real)NAN; /* written, never read */
                }
            tt_cpu_head_gemm(ta, tb, M, N, K, R(0.75), A, lda, B, ldb, C, ldc, add);
            ck_assert_close(label("head_gemm %dx%dx%d ta=%d tb=%d add=%d", M, N, K, ta, tb, add),
                            C, want, (int64_t)M * ldc, tol_sum(K), tol_sum(K));
            free_all(A, B, C, want);
        }
}
END_TEST

/* A causal head's gemms (tt_cpu_tri_gemm): every part of the triangle, both layouts of A, with
 * and without adding, widths that are and are not multiples of 8 and 16, against the double
 * loop (TT_TRI_FULL: every element; the parts: the elements they promise, the rest of C kept);
 * and the AVX-512 loops give the AVX2 loops' bits, element for element (where the CPU has
 * both; float64 builds have neither). */
START_TEST(test_tri_gemm)
{
    const int dims[][3] = {{16, 16, 16}, {13, 13, 32}, {33, 40, 33}, {64, 64, 32}, {7, 5, 3},
                           {100, 100, 24}, {48, 32, 48}};
    const tt_tri parts[] = {TT_TRI_FULL, TT_TRI_COLS, TT_TRI_K_UPTO, TT_TRI_K_FROM};
    bool both = tt_cpu_have_avx512f() && tt_cpu_have_avx2_fma() && sizeof(real) == 4;
    for (int d = 0; d < (int)(sizeof dims / sizeof dims[0]); d++)
        for (int p = 0; p < 4; p++)
            for (int f = 0; f < 4; f++) {
                tt_tri tri = parts[p];
                bool ta = f & 1, add = f & 2;
                int M = dims[d][0], N = dims[d][1], K = dims[d][2];
                if (tri == TT_TRI_COLS) N = M; /* scores: a square (T, T) */
                if (tri == TT_TRI_K_UPTO) K = M; /* D V: K runs over the keys */
                if (tri == TT_TRI_K_FROM) K = M;
                int lda = (ta ? M : K) + 3, ldb = N + 5, ldc = N + 2;
                real *A = randn((int64_t)(ta ? K : M) * lda, 60);
                real *B = randn((int64_t)K * ldb, 61);
                /* the parts read only the triangle: zero A where a causal head has zeros */
                for (int i = 0; i < M; i++)
                    for (int k = 0; k < K; k++) {
                        bool zero = (tri == TT_TRI_K_UPTO && k > i) ||
                                    (tri == TT_TRI_K_FROM && k < i);
                        if (zero) A[ta ? (int64_t)k * lda + i : (int64_t)i * lda + k] = 0;
                    }
                real *C = randn((int64_t)M * ldc, 62), *want = dup_real(C, (int64_t)M * ldc);
                real *C2 = dup_real(C, (int64_t)M * ldc);
                for (int i = 0; i < M; i++) {
                    int n = tri == TT_TRI_COLS ? tt_tri_cols(i, N) : N;
                    for (int j = 0; j < n; j++) {
                        double sum = 0;
                        for (int k = 0; k < K; k++)
                            sum += (double)(ta ? A[(int64_t)k * lda + i]
                                               : A[(int64_t)i * lda + k]) *
                                   (double)B[(int64_t)k * ldb + j];
                        real *w = &want[(int64_t)i * ldc + j];
                        *w = (real)((add ? (double)*w : 0) + 0.75 * sum);
                    }
                }
                tt_cpu_tri_gemm(tri, ta, M, N, K, R(0.75), A, lda, B, ldb, C, ldc, add);
                const char *what = label("tri_gemm part %d %dx%dx%d ta=%d add=%d", p, M, N, K, ta,
                                         add);
                ck_assert_close(what, C, want, (int64_t)M * ldc, tol_sum(K), tol_sum(K));
                if (both) {
                    tt_cpu_tri_gemm_on(TT_CPU_VEC_AVX2, tri, ta, M, N, K, R(0.75), A, lda, B, ldb,
                                       C2, ldc, add);
                    ck_assert_msg(!memcmp(C, C2, sizeof(real) * (size_t)M * (size_t)ldc),
                                  "%s: AVX-512 and AVX2 differ in bits", what);
                }
                free_all(A, B, C, want, C2);
            }
}
END_TEST

/* The whole gemm in tiles (tt_cpu_tile_gemm) is defined by its chains: k in blocks of 512,
 * each block one chain per element, acc = fma(a_ik, b_kj, acc) for k in order from +0, added as
 * c = fma(alpha, acc, c), c starting as the bias, C (add) or 0. So it must equal those chains
 * written as scalar fmaf (tile_ref), bit for bit, at either vector width: shapes across the k
 * blocks (K > 512), partial panels and row tiles, all four layouts, with and without add,
 * leading dimensions past the minimum, and a bias row in place of C. And tt_cpu_gemm, which
 * splits C over the pool's threads, gives the same bits at 1 and 3 threads, as does
 * linear_forward with its bias (float32 with AVX2 + FMA only: elsewhere there are no tiles). */
static float tile_ref(bool ta, bool tb, int i, int j, int K, float alpha, const real *A, int lda,
                      const real *B, int ldb, float c)
{
    for (int kb = 0; kb < K; kb += 512) {
        float acc = 0;
        for (int k = kb; k < K && k < kb + 512; k++)
            acc = fmaf((float)(ta ? A[(int64_t)k * lda + i] : A[(int64_t)i * lda + k]),
                       (float)(tb ? B[(int64_t)j * ldb + k] : B[(int64_t)k * ldb + j]), acc);
        c = fmaf(alpha, acc, c);
    }
    return K ? c : fmaf(alpha, 0.0f, c);
}

START_TEST(test_tile_gemm)
{
    if (sizeof(real) != 4 || !tt_cpu_have_avx2_fma()) return;
    const int dims[][3] = {{1, 1, 1}, {9, 17, 5}, {37, 53, 129}, {13, 100, 1100}, {600, 40, 530},
                           {64, 48, 0}, {17, 33, 513}, {12, 16, 24}, {20, 10, 21}, {6, 8, 15},
                           {20, 530, 600}}; /* the last: two chunks of packed B at k 512 */
    const tt_cpu_vec widths[] = {TT_CPU_VEC_AVX2, TT_CPU_VEC_AVX512};
    for (int d = 0; d < (int)(sizeof dims / sizeof dims[0]); d++)
        for (int f = 0; f < 12; f++) {
            bool ta = f & 1, tb = f & 2, add = f >= 4 && f < 8, bias = f >= 8;
            int M = dims[d][0], N = dims[d][1], K = dims[d][2];
            int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
            real *A = randn((int64_t)(ta ? K : M) * lda + 1, 70);
            real *B = randn((int64_t)(tb ? N : K) * ldb + 1, 71);
            real *C0 = randn((int64_t)M * ldc, 72), *want = dup_real(C0, (int64_t)M * ldc);
            real *b = bias ? randn(N, 73) : NULL;
            const real alpha = R(-0.75);
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    real *w = &want[(int64_t)i * ldc + j];
                    *w = tile_ref(ta, tb, i, j, K, (float)alpha, A, lda, B, ldb,
                                  bias ? (float)b[j] : add ? (float)*w : 0.0f);
                }
            for (int w = 0; w < 2; w++) {
                if (widths[w] == TT_CPU_VEC_AVX512 && !tt_cpu_have_avx512f()) continue;
                real *C = dup_real(C0, (int64_t)M * ldc);
                ck_assert(tt_cpu_tile_gemm_on(widths[w], ta, tb, M, N, K, alpha, A, lda, B, ldb,
                                              C, ldc, add, b));
                ck_assert_msg(!memcmp(C, want, sizeof(real) * (size_t)M * (size_t)ldc),
                              "tile gemm %dx%dx%d ta=%d tb=%d add=%d bias=%d width %d: not the "
                              "fmaf chains' bits", M, N, K, ta, tb, add, bias, w);
                free(C);
            }
            int before = be->get_threads();
            for (int t = 1; t <= 3; t += 2) {
                be->set_threads(t);
                real *C = dup_real(C0, (int64_t)M * ldc);
                if (bias) { /* linear_forward's form: x (M,K) w (N,K)^T + b, alpha 1 */
                    real *x = randn((int64_t)M * K + 1, 74), *wt = randn((int64_t)N * K + 1, 75);
                    for (int i = 0; i < M; i++)
                        for (int j = 0; j < N; j++)
                            want[(int64_t)i * ldc + j] =
                                tile_ref(false, true, i, j, K, 1.0f, x, K, wt, K, (float)b[j]);
                    for (int i = 0; i < M; i++) /* contiguous rows of N for linear_forward */
                        memcpy(C + (int64_t)i * N, want + (int64_t)i * ldc, sizeof(real) * N);
                    memcpy(want, C, sizeof(real) * (size_t)M * (size_t)N);
                    tt_cpu_linear_forward(C, x, wt, b, M, K, N);
                    ck_assert_msg(!memcmp(C, want, sizeof(real) * (size_t)M * (size_t)N),
                                  "linear_forward %dx%dx%d at %d threads: not the fmaf chains' "
                                  "bits", M, N, K, t);
                    free_all(x, wt, C);
                    continue;
                }
                tt_cpu_gemm(ta, tb, M, N, K, alpha, A, lda, 0, B, ldb, 0, add ? R(1) : R(0), C,
                            ldc, 0, 1);
                ck_assert_msg(!memcmp(C, want, sizeof(real) * (size_t)M * (size_t)ldc),
                              "gemm %dx%dx%d ta=%d tb=%d add=%d at %d threads: not the tiles' "
                              "bits", M, N, K, ta, tb, add, t);
                free(C);
            }
            be->set_threads(before);
            free_all(A, B, C0, want);
            free(b);
        }
}
END_TEST

/* The kernel set for a CPU OpenBLAS does not know: the best its features and OS allow, only
 * when it ranks above OpenBLAS's pick; a pick this table does not know stays. */
START_TEST(test_blas_core_choice)
{
    const tt_cpu_isa sse = {0}, avx = {.avx = true}, no_fma = {.avx = true, .avx2 = true},
                     avx2 = {.avx = true, .avx2 = true, .fma = true},
                     avx512 = {.avx = true, .avx2 = true, .fma = true, .avx512f = true,
                               .avx512bw = true, .avx512dq = true, .avx512vl = true,
                               .avx512cd = true},
                     knl = {.avx = true, .avx2 = true, .fma = true, .avx512f = true,
                            .avx512cd = true}; /* AVX-512F without BW/DQ/VL (Xeon Phi) */
    const struct {
        const tt_cpu_isa *isa;
        const char *picked, *want; /* want NULL: OpenBLAS's pick stays */
    } cases[] = {
        {&avx512, "Prescott", "SkylakeX"}, {&avx512, "Haswell", "SkylakeX"},
        {&avx512, "Zen", "SkylakeX"},      {&avx512, "SkylakeX", NULL},
        {&avx512, "Cooperlake", NULL},     {&avx512, "SapphireRapids", NULL},
        {&knl, "Prescott", "Haswell"},     {&avx2, "Prescott", "Haswell"},
        {&avx2, "Nehalem", "Haswell"},     {&avx2, "Sandybridge", "Haswell"},
        {&avx2, "Haswell", NULL},          {&avx2, "Zen", NULL},
        {&no_fma, "Prescott", "Sandybridge"}, {&avx, "Core2", "Sandybridge"},
        {&avx, "Sandybridge", NULL},       {&sse, "Prescott", NULL},
        {&avx512, "ARMV8", NULL},          {&avx512, "", NULL},
        {&avx512, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = tt_blas_core_better(cases[i].isa, cases[i].picked);
        ck_assert_msg(cases[i].want ? got && !strcmp(got, cases[i].want) : !got,
                      "case %zu (%s): %s, want %s", i, cases[i].picked ? cases[i].picked : "NULL",
                      got ? got : "NULL", cases[i].want ? cases[i].want : "NULL");
    }
}
END_TEST

Suite *gemm_suite(void)
{
    Suite *s = suite_create("gemm");

    TCase *tc = new_tcase(s, "gemm");
    tcase_add_loop_test(tc, test_gemm_beta0_overwrites, 0, 4);
    tcase_add_loop_test(tc, test_gemm_beta1_accumulates, 0, 4);
    tcase_add_loop_test(tc, test_gemm_general_beta, 0, 4);
    tcase_add_loop_test(tc, test_gemm_leading_dims, 0, 4);
    tcase_add_loop_test(tc, test_gemm_batched_strides, 0, 4);
    tcase_add_loop_test(tc, test_gemm_batched_shared_b, 0, 4);
    tcase_add_loop_test(tc, test_gemm_batched_shared_c_accumulates, 0, 4);
    tcase_add_test(tc, test_gemm_attention_heads);
    tcase_add_test(tc, test_head_gemm);
    tcase_add_test(tc, test_tri_gemm);
    tcase_add_test(tc, test_tile_gemm);
    tcase_add_loop_test(tc, test_gemm_large, 0, 4);

    tc = new_tcase(s, "memory");
    tcase_add_test(tc, test_fill);
    tcase_add_test(tc, test_zero);
    tcase_add_test(tc, test_copy);
    tcase_add_test(tc, test_alloc_host_round_trip);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_backend_get_cpu);
    tcase_add_test(tc, test_blas_core_choice);

    return s;
}
