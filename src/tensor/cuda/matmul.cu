/* cuda/matmul.cu: the gemms and a Linear's two slots, through cuBLAS and cuBLASLt on the handle
 * of the stream the backend's work goes to now (backend.cu owns the streams and handles:
 * blas.cuh). Gemms are row-major in the table and column-major in cuBLAS: a row-major C (M,N)
 * is a column-major C^T (N,M) = op(B)^T op(A)^T, so each call swaps A and B and M and N.
 * cuBLAS and cuBLASLt give the same bits on every run of one GPU model (their split-K
 * reductions keep a fixed order). */
#include "tensor/cuda/blas.cuh"

#include <stdint.h>
#include <string.h>
#include <type_traits>

#ifdef TT_DOUBLE
#define GEMM_STRIDED cublasDgemmStridedBatched
#else
#define GEMM_STRIDED cublasSgemmStridedBatched
#endif

void tt_cuda_gemm(bool ta, bool tb, int M, int N, int K, real alpha, const real *A, int lda,
                  int64_t sA, const real *B, int ldb, int64_t sB, real beta, real *C, int ldc,
                  int64_t sC, int batch)
{
    if (M <= 0 || N <= 0 || batch <= 0) return;
    /* K == 0: C = beta C, which cuBLAS does too */
    TT_CUBLAS_CHECK(GEMM_STRIDED(tt_cuda_blas().blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B, ldb, sB, A,
                                 lda, sA, &beta, C, ldc, sC, batch));
}

static void gemm_op(const tt_gemm_op *g)
{
    tt_cuda_gemm(g->ta, g->tb, g->M, g->N, g->K, g->alpha, g->A, g->lda, 0, g->B, g->ldb, 0,
                 g->beta, g->C, g->ldc, 0, 1);
}

/* ---- a Linear's forward: the bias in cuBLASLt's epilogue ----------------------------------
 * out = x W^T + bias as one cuBLASLt matmul whose epilogue adds the bias as it stores out
 * (CUBLASLT_EPILOGUE_BIAS), as PyTorch's Linear does: out is written once, where the bias
 * kernel and a gemm with beta 1 wrote it, read it back and wrote it again (base's Linears and
 * head: 3 GB a pass, 6 GB of traffic a step less). Column-major as in tt_cuda_gemm: D = out^T
 * (OUT,N) = op(A) B with A = W stored (IN,OUT) and op T, B = x^T (IN,N); the bias is one value
 * per row of D. A call's plan (descriptors and the heuristic's algorithm, for its shape, the
 * pointers' alignments and the matmul precision) is made at the first call that needs it and
 * kept: the descriptors are our memory (cuBLASLt's opaque structs), so no call allocates, and
 * the heuristic is host work, as PyTorch also calls it while a graph is captured. Where
 * cuBLASLt has no algorithm (it may refuse a shape, a dimension of 1 say), without a bias, with
 * a bias off 16-byte alignment (the heuristic takes no preference for the bias's alignment, and
 * the epilogue has been reported to fault below 16 bytes on an A100; a model's biases are
 * aligned), or with TT_CUDA_LT=0 in the environment (to time both ways in one run), the bias
 * kernel and a gemm with beta 1 do it, as on the CPU. The bits are the same on every run: the
 * algorithm is a function of the plan's key and the GPU, and every split-K reduction cuBLASLt
 * may pick adds its parts in a fixed order. */
#define LT_PLANS 32 /* a model has a few Linear shapes; past this many, the oldest goes */

typedef struct lt_plan {
    int N, IN, OUT;
    bool tf32;
    uint32_t align[4]; /* of W, x, out, bias: what the algorithm may assume */
    bool ok;           /* an algorithm was found */
    cublasLtMatmulDescOpaque_t desc;
    cublasLtMatrixLayoutOpaque_t a, b, d;
    cublasLtMatmulAlgo_t algo;
} lt_plan;

static lt_plan plans[LT_PLANS];
static int n_plans, next_plan;

/* the largest power of two, at most 256 (cuBLASLt's default assumption), dividing p's address */
static uint32_t align_of(const void *p)
{
    uint32_t a = 256;
    while (a > 1 && (uintptr_t)p % a) a /= 2;
    return a;
}

static void lt_make(lt_plan *p, cublasLtHandle_t lt, const real *bias)
{
    constexpr bool f64 = std::is_same_v<real, double>;
    const cudaDataType_t type = f64 ? CUDA_R_64F : CUDA_R_32F;
    const cublasComputeType_t compute = f64       ? CUBLAS_COMPUTE_64F
                                        : p->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                  : CUBLAS_COMPUTE_32F;
    const int32_t op_t = CUBLAS_OP_T;
    const uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    cublasLtMatmulDesc_t desc = &p->desc;
    TT_CUBLAS_CHECK(cublasLtMatmulDescInit(desc, compute, type));
    TT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t,
                                                   sizeof op_t));
    TT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                   sizeof epilogue));
    TT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                   sizeof bias));
    TT_CUBLAS_CHECK(cublasLtMatrixLayoutInit(&p->a, type, p->IN, p->OUT, p->IN));
    TT_CUBLAS_CHECK(cublasLtMatrixLayoutInit(&p->b, type, p->IN, p->N, p->IN));
    TT_CUBLAS_CHECK(cublasLtMatrixLayoutInit(&p->d, type, p->OUT, p->N, p->OUT));
    cublasLtMatmulPreferenceOpaque_t pref;
    const uint64_t ws = BLAS_WORKSPACE;
    TT_CUBLAS_CHECK(cublasLtMatmulPreferenceInit(&pref));
    TT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        &pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    /* A = W, B = x, C = D = out; the bias's alignment the heuristic reads from its pointer */
    static const cublasLtMatmulPreferenceAttributes_t ALIGN[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++)
        TT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
            &pref, ALIGN[i], &p->align[i < 3 ? i : 2], sizeof p->align[0]));
    cublasLtMatmulHeuristicResult_t r = {};
    int found = 0;
    const cublasStatus_t rc = cublasLtMatmulAlgoGetHeuristic(lt, desc, &p->a, &p->b, &p->d,
                                                             &p->d, &pref, 1, &r, &found);
    p->ok = rc == CUBLAS_STATUS_SUCCESS && found > 0 && r.state == CUBLAS_STATUS_SUCCESS;
    if (p->ok) p->algo = r.algo;
}

/* the plan for this call, NULL where cuBLASLt has no algorithm for it */
static lt_plan *lt_plan_for(const tt_cuda_blas_now &b, const real *out, const real *x,
                            const real *w, const real *bias, int N, int IN, int OUT)
{
    const uint32_t align[4] = {align_of(w), align_of(x), align_of(out), align_of(bias)};
    for (int i = 0; i < n_plans; i++) {
        lt_plan *p = &plans[i];
        if (p->N == N && p->IN == IN && p->OUT == OUT && p->tf32 == b.tf32 &&
            !memcmp(p->align, align, sizeof align))
            return p->ok ? p : NULL;
    }
    lt_plan *p = &plans[next_plan];
    next_plan = (next_plan + 1) % LT_PLANS;
    if (n_plans < LT_PLANS) n_plans++;
    memset(p, 0, sizeof *p);
    p->N = N, p->IN = IN, p->OUT = OUT, p->tf32 = b.tf32;
    memcpy(p->align, align, sizeof align);
    lt_make(p, b.lt, bias);
    return p->ok ? p : NULL;
}

void tt_cuda_linear_forward(real *out, const real *x, const real *w, const real *bias, int N,
                            int IN, int OUT)
{
    if (N <= 0 || OUT <= 0) return;
    const tt_cuda_blas_now b = tt_cuda_blas();
    const bool epilogue = b.lt && bias && (uintptr_t)bias % 16 == 0 && IN > 0;
    lt_plan *p = epilogue ? lt_plan_for(b, out, x, w, bias, N, IN, OUT) : NULL;
    if (!p) {
        if (bias) tt_cuda_bias_forward(out, NULL, bias, N, OUT);
        tt_cuda_gemm(false, true, N, OUT, IN, R(1), x, IN, 0, w, IN, 0, bias ? R(1) : R(0), out,
                     OUT, 0, 1);
        return;
    }
    /* the plan's bias has this one's alignment; the pointer itself is this call's */
    TT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(&p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                   &bias, sizeof bias));
    const real one = R(1), zero = R(0);
    const cublasStatus_t rc = cublasLtMatmul(b.lt, &p->desc, &one, w, &p->a, x, &p->b, &zero,
                                             out, &p->d, out, &p->d, &p->algo, b.workspace,
                                             BLAS_WORKSPACE, b.stream);
    if (rc)
        tt_fatal(__FILE__, __LINE__, "cuBLASLt's matmul of a Linear (%d rows, %d in, %d out) "
                 "failed: cuBLAS status %d (%s). HINT: TT_CUDA_LT=0 in the environment gives "
                 "Linears the bias kernel and a plain gemm instead", N, IN, OUT, (int)rc,
                 cublasGetStatusString(rc));
}

/* dw and db on the side stream, dx beside them */
void tt_cuda_linear_backward(const tt_gemm_op *dx, const tt_gemm_op *dw, real *db,
                             const real *dy, int64_t N, int C)
{
    tt_cuda_beside(
        dx && (dw || db),
        [&] {
            if (dw) gemm_op(dw);
            if (db) tt_cuda_bias_backward(db, dy, N, C);
        },
        [&] {
            if (dx) gemm_op(dx);
        });
}
