/* cpu/matmul.c: row-major (batched, strided) gemm, threaded by the pool.
 * C = alpha * op(A) op(B) + beta * C; the backward of a matmul is two more calls of this with
 * beta = 1 (see autograd/ops_matmul.c), so gradients accumulate.
 *
 * Float32 on a CPU with AVX2 + FMA runs in our own tiles (tt_cpu_tile_gemm, tri_gemm.c) for
 * beta 0 or 1: a training step as fast as on OpenBLAS's AVX-512 kernels, and on AVX2 as on
 * its Haswell ones, within the machine's swings (bench/RESULTS.md); a Linear's bias added as
 * C is written; sums whose bits depend on neither the vector width, nor OpenBLAS's kernel
 * set, nor how C is split.
 * Float64, other CPUs and other betas run OpenBLAS, single-threaded (tt_cpu_set_threads).
 *
 * The pool hands out blocks of C: a batch of several items (attention heads) by item; one
 * matrix in max(2, threads) blocks of rows when C is at least as tall as wide, else of
 * columns. One block per thread: each block copies what it needs of the shared operand again,
 * and 8 blocks on 2 threads cost 5% of a step (measured on the small bench config, OpenBLAS).
 * OpenBLAS's sums depend on the block's shape, so there C has the same bits at 1 and 2 threads
 * (both split in 2), and may differ in the last bits at more. A gemm called inside a job (an
 * attention head, one of a gemm_pair) is one block. */
#include "tensor/cpu/cpu.h"
#include "tensor/cpu/pool.h"

#include <cblas.h>
#include <string.h>

#ifdef TT_DOUBLE
#define CBLAS_GEMM cblas_dgemm
#else
#define CBLAS_GEMM cblas_sgemm
#endif

#define GEMM_SPLIT_FLOPS 2e6 /* below this a gemm runs on the caller: a job costs ~1-2 us */
#define GEMM_ALIGN 16        /* block edges on the micro-kernel's tile (16 rows of sgemm) */
#define GEMM_MIN_BLOCKS 2    /* blocks of a split gemm: this many, or one per thread if more */

typedef struct gemm_args {
    bool ta, tb;
    int M, N, K;
    real alpha, beta;
    const real *A, *B;
    real *C;
    int lda, ldb, ldc;
    int64_t sA, sB, sC;
    const real *bias; /* a row of N added to every row of C (beta 0; linear_forward) */
} gemm_args;

/* rows [r0, r1) x columns [c0, c1) of C for batch item i: in the tiles where they run (beta 0
 * or 1: what the callers use), else by OpenBLAS, a bias first copied into the block's rows */
static void gemm_block(const gemm_args *g, int64_t i, int r0, int r1, int c0, int c1)
{
    const real *A = g->A + i * g->sA + (g->ta ? r0 : (int64_t)r0 * g->lda);
    const real *B = g->B + i * g->sB + (g->tb ? (int64_t)c0 * g->ldb : c0);
    real *C = g->C + i * g->sC + (int64_t)r0 * g->ldc + c0;
    const real *bias = g->bias ? g->bias + c0 : NULL;
    if ((g->beta == R(0) || g->beta == R(1)) &&
        tt_cpu_tile_gemm(g->ta, g->tb, r1 - r0, c1 - c0, g->K, g->alpha, A, g->lda, B, g->ldb, C,
                         g->ldc, g->beta == R(1), bias))
        return;
    real beta = g->beta;
    if (bias) {
        for (int r = 0; r < r1 - r0; r++)
            memcpy(C + (int64_t)r * g->ldc, bias, sizeof(real) * (size_t)(c1 - c0));
        beta = R(1);
    }
    CBLAS_GEMM(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans,
               g->tb ? CblasTrans : CblasNoTrans, r1 - r0, c1 - c0, g->K, g->alpha, A, g->lda,
               B, g->ldb, beta, C, g->ldc);
}

typedef struct split_ctx {
    const gemm_args *g;
    int64_t item;
    int len, blocks; /* the split dimension (M or N) and its blocks */
    bool rows;
} split_ctx;

static void gemm_split_blocks(void *ctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const split_ctx *s = ctx;
    int units = (s->len + GEMM_ALIGN - 1) / GEMM_ALIGN;
    for (int64_t b = begin; b < end; b++) {
        int lo = (int)(units * b / s->blocks) * GEMM_ALIGN;
        int hi = (int)(units * (b + 1) / s->blocks) * GEMM_ALIGN;
        if (hi > s->len) hi = s->len;
        if (lo >= hi) continue;
        if (s->rows)
            gemm_block(s->g, s->item, lo, hi, 0, s->g->N);
        else
            gemm_block(s->g, s->item, 0, s->g->M, lo, hi);
    }
}

static void gemm_items(void *ctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const gemm_args *g = ctx;
    for (int64_t i = begin; i < end; i++) gemm_block(g, i, 0, g->M, 0, g->N);
}

/* C over the pool: small gemms on the caller, items of a batch by item, one matrix in blocks */
static void gemm_run(const gemm_args *g, int batch)
{
    if (2.0 * g->M * g->N * g->K * batch < GEMM_SPLIT_FLOPS) {
        gemm_items((void *)g, 0, batch, 0);
        return;
    }
    if (batch > 1 && g->sC != 0) { /* items write disjoint outputs */
        tt_pool_each(batch, gemm_items, (void *)g);
        return;
    }
    for (int64_t i = 0; i < batch; i++) {
        split_ctx s = {.g = g, .item = i, .rows = g->M >= g->N};
        s.len = s.rows ? g->M : g->N;
        /* inside a job (a head, one of a pair) the gemm is one block at any thread count */
        int units = (s.len + GEMM_ALIGN - 1) / GEMM_ALIGN, most = tt_pool_threads();
        if (most < GEMM_MIN_BLOCKS) most = GEMM_MIN_BLOCKS;
        if (tt_pool_in_job()) most = 1;
        s.blocks = units < most ? units : most;
        tt_pool_for(s.blocks, 1, 1, gemm_split_blocks, &s);
    }
}

void tt_cpu_gemm(bool ta, bool tb, int M, int N, int K, real alpha, const real *A, int lda,
                 int64_t sA, const real *B, int ldb, int64_t sB, real beta, real *C, int ldc,
                 int64_t sC, int batch)
{
    TT_ASSERT_MSG(M >= 0 && N >= 0 && K >= 0 && batch >= 0, "gemm: negative size M=%d N=%d K=%d "
                  "batch=%d", M, N, K, batch);
    TT_ASSERT_MSG(lda >= (ta ? M : K) && ldb >= (tb ? K : N) && ldc >= N,
                  "gemm: leading dimensions too small: lda=%d ldb=%d ldc=%d for M=%d N=%d K=%d "
                  "ta=%d tb=%d", lda, ldb, ldc, M, N, K, ta, tb);
    TT_ASSERT_MSG(batch <= 1 || sC != 0 || beta != R(0),
                  "gemm: a shared output (stride 0) over a batch must accumulate (beta != 0)");
    if (M == 0 || N == 0 || batch == 0) return;
    /* BLAS wants leading dimensions >= 1 even for empty inner sizes. */
    gemm_args g = {.ta = ta, .tb = tb, .M = M, .N = N, .K = K, .alpha = alpha, .beta = beta,
                   .A = A, .B = B, .C = C, .lda = lda < 1 ? 1 : lda, .ldb = ldb < 1 ? 1 : ldb,
                   .ldc = ldc, .sA = sA, .sB = sB, .sC = sC};
    gemm_run(&g, batch);
}

static void gemm_op(const tt_gemm_op *o)
{
    tt_cpu_gemm(o->ta, o->tb, o->M, o->N, o->K, o->alpha, o->A, o->lda, 0, o->B, o->ldb, 0,
                o->beta, o->C, o->ldc, 0, 1);
}

/* out = x w^T + bias: the bias is where each block's sums are added (the tiles read it as they
 * write out: no pass of its own), else copied into the block's rows first for OpenBLAS */
void tt_cpu_linear_forward(real *out, const real *x, const real *w, const real *bias, int N,
                           int IN, int OUT)
{
    if (N == 0 || OUT == 0) return;
    gemm_args g = {.ta = false, .tb = true, .M = N, .N = OUT, .K = IN, .alpha = R(1),
                   .beta = R(0), .A = x, .B = w, .C = out, .lda = IN < 1 ? 1 : IN,
                   .ldb = IN < 1 ? 1 : IN, .ldc = OUT, .bias = bias};
    gemm_run(&g, 1);
}

typedef struct linear_parts {
    const tt_gemm_op *op[2];
    real *db;
    const real *dy;
    int64_t N;
    int C;
} linear_parts;

static void linear_part(void *ctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const linear_parts *l = ctx;
    for (int64_t i = begin; i < end; i++) {
        if (i == 2) { /* inside the job the column sums run on this thread alone */
            tt_cpu_bias_backward(l->db, l->dy, l->N, l->C);
            continue;
        }
        gemm_op(l->op[i]);
    }
}

/* With dx and dW both wanted: each gemm whole on its own thread (inside the pool's job,
 * tt_cpu_gemm does not split), so with two threads both are busy and no operand is packed
 * twice (tiny's Linear backward took 4 OpenBLAS calls, now 2); db goes to whichever thread is
 * free first. At one thread they run one after the other, unsplit too, so the bits are the
 * same; column sums are the same bits however they are split. With more threads the others
 * wait. With one gemm only, it is split as usual. */
void tt_cpu_linear_backward(const tt_gemm_op *dx, const tt_gemm_op *dw, real *db, const real *dy,
                            int64_t N, int C)
{
    if (dx && dw) {
        linear_parts l = {.op = {dx, dw}, .db = db, .dy = dy, .N = N, .C = C};
        tt_pool_each(db ? 3 : 2, linear_part, &l);
        return;
    }
    if (dx) gemm_op(dx);
    if (dw) gemm_op(dw);
    if (db) tt_cpu_bias_backward(db, dy, N, C);
}

/* OpenBLAS's own shutdown of its server threads (exported by the pthreads build, used by its
 * fork handler). Weak: if a build lacks it, its idle threads merely stay. */
extern int blas_thread_shutdown_(void) __attribute__((weak));

/* The pool gets the threads; OpenBLAS keeps one, so its own pool never competes with ours.
 * Its server threads are stopped too: started at load time, they spin (sched_yield) for about
 * 0.1 s before they sleep, and on 2 cores that alone made the first tiny steps 5x slower. */
void tt_cpu_set_threads(int n)
{
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_) blas_thread_shutdown_();
    tt_pool_start(n);
}

int tt_cpu_get_threads(void) { return tt_pool_threads(); }
