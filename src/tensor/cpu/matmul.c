/* cpu/matmul.c: row-major (batched, strided) gemm on OpenBLAS.
 * C = alpha * op(A) op(B) + beta * C; the backward of a matmul is two more calls of this with
 * beta = 1 (see autograd/ops_matmul.c), so gradients accumulate. */
#include "tensor/cpu/cpu.h"

#include <cblas.h>

#ifdef TT_DOUBLE
#define CBLAS_GEMM cblas_dgemm
#else
#define CBLAS_GEMM cblas_sgemm
#endif

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
    if (M == 0 || N == 0) return;
    /* BLAS wants leading dimensions >= 1 even for empty inner sizes. */
    if (lda < 1) lda = 1;
    if (ldb < 1) ldb = 1;
    for (int i = 0; i < batch; i++)
        CBLAS_GEMM(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                   M, N, K, alpha, A + i * sA, lda, B + i * sB, ldb, beta, C + i * sC, ldc);
}

void tt_cpu_set_threads(int n)
{
    if (n <= 0) n = openblas_get_num_procs();
    openblas_set_num_threads(n);
}

int tt_cpu_get_threads(void) { return openblas_get_num_threads(); }
