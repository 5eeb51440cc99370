/* cuda/attention_ref.cu: attention forward as the unfused composition, the reference for the
 * fused kernels' tests and the baseline of their benchmark: per head h, S = scale Q K^T into
 * att (one strided-batched cuBLAS gemm over the B batches), a masked softmax in place on att
 * (causal j > i and padding keys to -inf, max subtracted, an all-masked row all zeros), then
 * O = P V (one gemm per head again). Saves att = P. Limits: forward only, no dropout (p = 0),
 * and att is written twice (scores, then weights): it is the reference, not the fast path. */
#include "tensor/cuda/attention_ref.h"
#include "tensor/cuda/common.cuh" /* warp_sum, warp_max */

#include <cuda_runtime.h>

/* One warp per row (b, h, i) of att (B,NH,T,T), rows grid-strided; pad (B,T) or NULL. The
 * warp's max and sum are common.cuh's xor butterflies: a fixed order. */
static __global__ void attention_ref_softmax_kernel(real *att, const int32_t *pad, int B, int NH,
                                                    int T, bool causal)
{
    const int lane = (int)(threadIdx.x % 32);
    const int64_t rows = (int64_t)B * NH * T, warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; row < rows;
         row += warps) {
        const int i = (int)(row % T), b = (int)(row / ((int64_t)NH * T));
        const int32_t *pb = pad ? pad + (int64_t)b * T : NULL;
        real *x = att + row * T;
        real m = -R_INF;
        for (int j = lane; j < T; j += 32) {
            if ((causal && j > i) || (pb && pb[j])) x[j] = -R_INF;
            m = x[j] > m ? x[j] : m;
        }
        m = warp_max(m);
        real sum = R(0);
        for (int j = lane; j < T; j += 32) {
            x[j] = m == -R_INF ? R(0) : R_EXP(x[j] - m);
            sum += x[j];
        }
        sum = warp_sum(sum);
        real inv = sum > R(0) ? R(1) / sum : R(0);
        for (int j = lane; j < T; j += 32) x[j] *= inv;
    }
}

void tt_cuda_attention_reference_forward(real *out, real *att, const real *q, const real *k,
                                         const real *v, const int32_t *pad, const tt_attn_desc *a)
{
    TT_ASSERT_MSG(a->p == R(0), "attention reference: dropout p = %g is not supported. HINT: "
                  "compare with p = 0 (the fused kernel's masks are checked against the CPU's)",
                  (double)a->p);
    const int B = a->B, T = a->T, NH = a->NH, HS = a->HS;
    const int64_t TT = (int64_t)T * T;
    if (B <= 0 || T <= 0) return;
    /* per head h: the B batches of Q_h (T,HS) are T*ldq apart, their (T,T) scores NH*T*T */
    for (int h = 0; h < NH; h++)
        tt_cuda_gemm(false, true, T, T, HS, a->scale, q + (int64_t)h * HS, a->ldq,
                     (int64_t)T * a->ldq, k + (int64_t)h * HS, a->ldk, (int64_t)T * a->ldk, R(0),
                     att + h * TT, T, NH * TT, B);
    const int64_t rows = (int64_t)B * NH * T;
    attention_ref_softmax_kernel<<<tt_cuda_blocks(rows * 32), TT_CUDA_THREADS, 0,
                                   (cudaStream_t)tt_cuda_stream()>>>(att, pad, B, NH, T, a->causal);
    TT_CUDA_CHECK(cudaGetLastError());
    for (int h = 0; h < NH; h++)
        tt_cuda_gemm(false, false, T, HS, T, R(1), att + h * TT, T, NH * TT, v + (int64_t)h * HS,
                     a->ldv, (int64_t)T * a->ldv, R(0), out + (int64_t)h * HS, a->ldo,
                     (int64_t)T * a->ldo, B);
}
