/* cuda/blas.cuh: what matmul.cu takes from backend.cu, which owns the streams and the
 * handles (C++ only, included after cuda.h's declarations). */
#ifndef TT_CUDA_BLAS_CUH
#define TT_CUDA_BLAS_CUH

#include "tensor/cuda/cuda.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

/* cuBLAS's workspace, one a handle, ours rather than its pool's, so that a captured step (a
 * CUDA graph) never asks cuBLAS to allocate: 32 MiB, what NVIDIA advises for Hopper (more than
 * enough for the A100's 4 MiB). cuBLASLt's matmuls use the workspace of the stream they run on
 * (calls on one stream run one after another, so they never share it at once). */
#define BLAS_WORKSPACE ((size_t)32 << 20)

/* the stream the backend's work goes to now (the side stream inside tt_cuda_side_begin/end),
 * its cuBLAS handle and that handle's workspace; cuBLASLt's handle (NULL with TT_CUDA_LT=0 in
 * the environment: the Linears' forward then goes without it); whether matmul_precision is
 * "high". Made on first use (backend.cu). */
typedef struct tt_cuda_blas_now {
    cublasHandle_t blas;
    void *workspace;
    cudaStream_t stream;
    cublasLtHandle_t lt;
    bool tf32;
} tt_cuda_blas_now;
tt_cuda_blas_now tt_cuda_blas(void);

#endif
