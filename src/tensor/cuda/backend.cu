/* cuda/backend.cu: device memory, the stream, cuBLAS gemms and the CUDA kernel table
 * (make CUDA=1 only). Every kernel runs on one stream; the host waits for it only where a
 * value comes back (to_host, sum_squares) or host memory handed in may be reused (from_host).
 * Gemms are row-major in the table and column-major in cuBLAS: a row-major C (M,N) is a
 * column-major C^T (N,M) = op(B)^T op(A)^T, so each call swaps A and B and M and N. */
#include "tensor/cuda/cuda.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdio.h>

void tt_cuda_fatal(const char *call, int rc, const char *file, int line)
{
    tt_fatal(file, line, "%s failed: %s (%s)", call, cudaGetErrorString((cudaError_t)rc),
             cudaGetErrorName((cudaError_t)rc));
}

void tt_cublas_fatal(const char *call, int rc, const char *file, int line)
{
    tt_fatal(file, line, "%s failed: cuBLAS status %d (%s)", call, rc,
             cublasGetStatusString((cublasStatus_t)rc));
}

static cudaStream_t stream;
static cublasHandle_t blas;

/* The stream and the cuBLAS handle, made on first use (outside any step: the run's first
 * allocation comes before its first step). */
static void ensure_init(void)
{
    if (blas) return;
    TT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    TT_CUBLAS_CHECK(cublasCreate(&blas));
    TT_CUBLAS_CHECK(cublasSetStream(blas, stream));
}

void *tt_cuda_stream(void)
{
    ensure_init();
    return (void *)stream;
}

static int cuda_available(char *err, size_t errlen)
{
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess || n == 0)
        return tt_errorf(err, errlen, "device \"cuda\": no CUDA device can be used here (%s). "
                         "HINT: run on a machine with an NVIDIA GPU and its driver, or set "
                         "\"device\": \"cpu\"", rc != cudaSuccess ? cudaGetErrorString(rc)
                                                                  : "no device found");
    return 0;
}

/* What cudaMalloc can still get on the current device (other processes' use counted). */
static int cuda_mem_info(size_t *free_bytes, size_t *total_bytes)
{
    *free_bytes = *total_bytes = 0;
    return cudaMemGetInfo(free_bytes, total_bytes) == cudaSuccess ? 0 : -1;
}

static void *cuda_alloc(size_t bytes)
{
    ensure_init();
    void *p = NULL;
    cudaError_t rc = cudaMalloc(&p, bytes ? bytes : 64);
    TT_ASSERT_MSG(rc == cudaSuccess, "out of memory: could not allocate %zu bytes on the GPU "
                  "(cudaMalloc: %s)", bytes, cudaGetErrorString(rc));
    return p;
}

static void cuda_free(void *p)
{
    TT_CUDA_CHECK(cudaFree(p));
}

static void cuda_zero(void *p, size_t bytes)
{
    TT_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream));
}

static void cuda_copy(void *dst, const void *src, size_t bytes)
{
    TT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
}

static void cuda_to_host(void *dst, const void *src, size_t bytes)
{
    TT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
    TT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

/* synchronous: the caller may reuse or free its host buffer as soon as this returns */
static void cuda_from_host(void *dst, const void *src, size_t bytes)
{
    TT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
    TT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

/* the GPU schedules its own threads; the key `threads` is the CPU's */
static void cuda_set_threads(int n) { (void)n; }
static int cuda_get_threads(void) { return 1; }

/* "high": cuBLAS may round float32 gemm inputs to TF32 on tensor cores (PyTorch's
 * torch.backends.cuda.matmul.allow_tf32); "highest": pedantic float32. float64 is unaffected. */
static void cuda_set_matmul_precision(bool high)
{
    ensure_init();
    TT_CUBLAS_CHECK(cublasSetMathMode(blas, high ? CUBLAS_TF32_TENSOR_OP_MATH
                                                 : CUBLAS_PEDANTIC_MATH));
}

__global__ void fill_kernel(real *x, real value, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        x[i] = value;
}

void tt_cuda_fill(real *x, real value, int64_t n)
{
    if (n <= 0) return;
    fill_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream>>>(x, value, n);
    TT_CUDA_CHECK(cudaGetLastError());
}

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
    ensure_init();
    /* K == 0: C = beta C, which cuBLAS does too */
    TT_CUBLAS_CHECK(GEMM_STRIDED(blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B, ldb, sB, A,
                                 lda, sA, &beta, C, ldc, sC, batch));
}

static void gemm_op(const tt_gemm_op *g)
{
    tt_cuda_gemm(g->ta, g->tb, g->M, g->N, g->K, g->alpha, g->A, g->lda, 0, g->B, g->ldb, 0,
                 g->beta, g->C, g->ldc, 0, 1);
}

void tt_cuda_linear_backward(const tt_gemm_op *dx, const tt_gemm_op *dw, real *db,
                             const real *dy, int64_t N, int C)
{
    if (dx) gemm_op(dx);
    if (dw) gemm_op(dw);
    if (db) tt_cuda_bias_backward(db, dy, N, C);
}

extern "C" const tt_backend tt_cuda_backend = {
    .name = "cuda",
    .available = cuda_available,
    .mem_info = cuda_mem_info,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .zero = cuda_zero,
    .copy = cuda_copy,
    .to_host = cuda_to_host,
    .from_host = cuda_from_host,
    .fill = tt_cuda_fill,
    .set_threads = cuda_set_threads,
    .get_threads = cuda_get_threads,
    .set_matmul_precision = cuda_set_matmul_precision,
    .gemm = tt_cuda_gemm,
    .linear_backward = tt_cuda_linear_backward,
    .axpy = tt_cuda_axpy,
    .add_forward = tt_cuda_add_forward,
    .scale_forward = tt_cuda_scale_forward,
    .bias_forward = tt_cuda_bias_forward,
    .bias_backward = tt_cuda_bias_backward,
    .mul_forward = tt_cuda_mul_forward,
    .mul_backward = tt_cuda_mul_backward,
    .relu_forward = tt_cuda_relu_forward,
    .relu_backward = tt_cuda_relu_backward,
    .gelu_forward = tt_cuda_gelu_forward,
    .gelu_backward = tt_cuda_gelu_backward,
    .softmax_forward = tt_cuda_softmax_forward,
    .softmax_backward = tt_cuda_softmax_backward,
    .layernorm_forward = tt_cuda_layernorm_forward,
    .layernorm_backward = tt_cuda_layernorm_backward,
    .embedding_forward = tt_cuda_embedding_forward,
    .embedding_backward = tt_cuda_embedding_backward,
    .dropout_forward = tt_cuda_dropout_forward,
    .dropout_backward = tt_cuda_dropout_backward,
    .relu_dropout_forward = tt_cuda_relu_dropout_forward,
    .relu_dropout_backward = tt_cuda_relu_dropout_backward,
    .dropout_add_forward = tt_cuda_dropout_add_forward,
    .gelu_dropout_forward = tt_cuda_gelu_dropout_forward,
    .gelu_dropout_backward = tt_cuda_gelu_dropout_backward,
    .crossentropy_forward = tt_cuda_crossentropy_forward,
    .crossentropy_backward = tt_cuda_crossentropy_backward,
    .attention_forward = tt_cuda_attention_forward,
    .attention_backward = tt_cuda_attention_backward,
    .attention_scratch = tt_cuda_attention_scratch,
    .sum_forward = tt_cuda_sum_forward,
    .sum_backward = tt_cuda_sum_backward,
    .adamw_step = tt_cuda_adamw_step,
    .sgd_step = tt_cuda_sgd_step,
    .sum_squares = tt_cuda_sum_squares,
};
