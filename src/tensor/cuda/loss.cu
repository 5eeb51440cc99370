/* cuda/loss.cu: fused log-softmax + cross-entropy, rows one warp each.
 *   lse_i = m_i + log sum_v exp(x_iv - m_i),  loss = (1/count) sum_{i counted} (lse_i - x_i,t_i)
 *   dx_iv += dloss / count * (exp(x_iv - lse_i) - [v == t_i]) for counted rows i
 * Rows with target -100 (PyTorch's ignore_index) count for nothing; a target outside [0, V)
 * that is not -100 stops the kernel (a device assert, the CPU's TT_ASSERT). Saves lse (N) and
 * recomputes the probabilities in backward. Deterministic: the loss is one block's fixed tree
 * in double over the saved lse, the count an integer tree, no atomics. */
#include "tensor/cuda/common.cuh"

#include <assert.h>

/* lse (N) = the log-sum-exp of each row of logits (N,V) */
static __global__ void lse_kernel(real *lse, const real *logits, int64_t N, int V)
{
    const int lane = threadIdx.x % 32;
    ROW_LOOP(r, N)
    {
        const real *x = logits + r * V;
        real m = -R_INF;
        for (int v = lane; v < V; v += 32)
            m = x[v] > m ? x[v] : m;
        m = warp_max(m);
        real s = R(0);
        for (int v = lane; v < V; v += 32)
            s += R_EXP(x[v] - m);
        s = warp_sum(s);
        if (lane == 0) lse[r] = m + R_LOG(s);
    }
}

/* the backward's dloss[0] / count, from ce_total_kernel to ce_backward_kernel: the next
 * kernel on the one stream, so calls never overlap */
static __device__ real ce_grad;

/* With loss (1): loss[0] = the mean of lse_i - x_i,t_i over the counted rows (0 when none).
 * Without: ce_grad = dloss[0] / count (0 when none). One block of TT_CUDA_THREADS threads:
 * thread t takes rows t, t + TT_CUDA_THREADS, ... in order, then a fixed tree.
 * dloss (1), targets (N), lse (N), logits (N,V) */
static __global__ void ce_total_kernel(real *loss, const real *dloss, const int32_t *targets,
                                       const real *lse, const real *logits, int64_t N, int V)
{
    __shared__ double total[TT_CUDA_THREADS];
    __shared__ long long count[TT_CUDA_THREADS];
    const int t = threadIdx.x;
    double s = 0.0;
    long long c = 0;
    for (int64_t i = t; i < N; i += TT_CUDA_THREADS) {
        int32_t y = targets[i];
        assert(y == TT_IGNORE_INDEX || (y >= 0 && y < V)); /* a target outside [0, V) */
        if (y == TT_IGNORE_INDEX) continue;
        c++;
        if (loss) s += (double)(lse[i] - logits[i * V + y]);
    }
    total[t] = s;
    count[t] = c;
    __syncthreads();
    for (int k = TT_CUDA_THREADS / 2; k > 0; k /= 2) {
        if (t < k) {
            total[t] += total[t + k];
            count[t] += count[t + k];
        }
        __syncthreads();
    }
    if (t > 0) return;
    if (loss)
        loss[0] = count[0] ? (real)(total[0] / (double)count[0]) : R(0);
    else
        ce_grad = count[0] ? dloss[0] / (real)count[0] : R(0);
}

/* loss (1), lse (N), logits (N,V), targets (N); N == 0 still writes the loss (0) */
void tt_cuda_crossentropy_forward(real *loss, real *lse, const real *logits, const int32_t *targets,
                                  int64_t N, int V)
{
    if (N > 0) {
        lse_kernel<<<tt_cuda_blocks(N * 32), TT_CUDA_THREADS, 0, stream()>>>(lse, logits, N, V);
        TT_CUDA_CHECK(cudaGetLastError());
    }
    ce_total_kernel<<<1, TT_CUDA_THREADS, 0, stream()>>>(loss, NULL, targets, lse, logits,
                                                         N > 0 ? N : 0, V);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* dlogits (N,V) += g * (exp(x - lse) - onehot(target)) on the counted rows, g = ce_grad;
 * logits (N,V), lse (N) saved, targets (N). The target's element gets + g p, then - g, as on
 * the CPU. */
static __global__ void ce_backward_kernel(real *dlogits, const real *logits, const real *lse,
                                          const int32_t *targets, int64_t N, int V)
{
    const int lane = threadIdx.x % 32;
    const real g = ce_grad;
    ROW_LOOP(r, N)
    {
        int32_t y = targets[r];
        if (y == TT_IGNORE_INDEX) continue;
        const real *x = logits + r * V;
        real *dx = dlogits + r * V, l = lse[r];
        for (int v = lane; v < V; v += 32) {
            dx[v] += g * R_EXP(x[v] - l);
            if (v == y) dx[v] -= g;
        }
    }
}

/* dlogits (N,V), dloss (1), logits (N,V), lse (N) saved, targets (N) */
void tt_cuda_crossentropy_backward(real *dlogits, const real *dloss, const real *logits,
                                   const real *lse, const int32_t *targets, int64_t N, int V)
{
    if (N <= 0 || V <= 0) return;
    ce_total_kernel<<<1, TT_CUDA_THREADS, 0, stream()>>>(NULL, dloss, targets, lse, logits, N, V);
    TT_CUDA_CHECK(cudaGetLastError());
    ce_backward_kernel<<<tt_cuda_blocks(N * 32), TT_CUDA_THREADS, 0, stream()>>>(
        dlogits, logits, lse, targets, N, V);
    TT_CUDA_CHECK(cudaGetLastError());
}
