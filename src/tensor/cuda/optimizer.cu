/* cuda/optimizer.cu: the optimizers' element loops, the clipping norm's sum of squares, and
 * clipping. AdamW and SGD are tensor/kernel_math.h's element updates, the ones the CPU loops
 * call (PyTorch's single-tensor order), one thread per element; the scalars come by value from
 * the host's struct, or, in a captured step, from the device's tt_cuda_vary (cuda.h). A gate
 * (the step's loss) that is not finite leaves everything as it was. The sum of squares is a
 * fixed two-pass tree in double (a block count that depends on n only, never on the GPU), so
 * the norm has the same bits on every run; sum_squares hands the host its double (it waits for
 * the device), clip_grads keeps it on the device and scales there. */
#include "tensor/cuda/common.cuh"
#include "tensor/kernel_math.h"

/* whether a gated update may go ahead: no gate, or a finite one */
static __device__ bool open_gate(const real *gate)
{
    return !gate || isfinite(*gate);
}

/* p, m, v, g (n): one AdamW update each */
static __global__ void adamw_kernel(real *p, real *m, real *v, const real *g, tt_adamw_scalars s,
                                    const tt_cuda_vary *vary, const real *gate, int64_t n)
{
    if (!open_gate(gate)) return;
    if (vary) s = vary->adamw;
    GRID_LOOP(i, n) tt_adamw_update(&p[i], &m[i], &v[i], g[i], &s);
}

void tt_cuda_adamw_step(real *p, real *m, real *v, const real *g, const tt_adamw_scalars *s,
                        const real *gate, int64_t n)
{
    if (n <= 0) return;
    adamw_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(
        p, m, v, g, *s, tt_cuda_step_vary(), gate, n);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* p, buf, g (n): one SGD update each (buf touched only with momentum) */
static __global__ void sgd_kernel(real *p, real *buf, const real *g, tt_sgd_scalars s,
                                  const tt_cuda_vary *vary, const real *gate, int64_t n)
{
    if (!open_gate(gate)) return;
    if (vary) s = vary->sgd;
    GRID_LOOP(i, n) tt_sgd_update(&p[i], &buf[i], g[i], &s);
}

void tt_cuda_sgd_step(real *p, real *buf, const real *g, const tt_sgd_scalars *s,
                      const real *gate, int64_t n)
{
    if (n <= 0) return;
    sgd_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(
        p, buf, g, *s, tt_cuda_step_vary(), gate, n);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* Pass 1: sq_blocks(n) blocks, each summing its grid-strided share of x^2 in double and
 * reducing it in a fixed tree into sq_part[block]; pass 2: one block adds the parts in a
 * fixed tree into sq_total. Static device buffers: kernels on the one stream run in order. */
#define SQ_MAX_BLOCKS 1024
static __device__ double sq_part[SQ_MAX_BLOCKS];
static __device__ double sq_total;

static unsigned sq_blocks(int64_t n)
{
    int64_t b = (n + 4 * TT_CUDA_THREADS - 1) / (4 * TT_CUDA_THREADS);
    return (unsigned)(b < SQ_MAX_BLOCKS ? b : SQ_MAX_BLOCKS);
}

/* s[0] = the sum of s[0 .. TT_CUDA_THREADS), a fixed tree; every thread of the block calls it */
static __device__ void block_sum(double *s)
{
    __syncthreads();
    for (int k = TT_CUDA_THREADS / 2; k > 0; k /= 2) {
        if ((int)threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
}

/* sq_part[block] = the sum of x^2 over the block's share of x (n) */
static __global__ void sq_pass1_kernel(const real *x, int64_t n)
{
    __shared__ double s[TT_CUDA_THREADS];
    double acc = 0.0;
    GRID_LOOP(i, n) acc += (double)x[i] * (double)x[i];
    s[threadIdx.x] = acc;
    block_sum(s);
    if (threadIdx.x == 0) sq_part[blockIdx.x] = s[0];
}

/* sq_total = the sum of sq_part[0 .. parts) */
static __global__ void sq_pass2_kernel(unsigned parts)
{
    __shared__ double s[TT_CUDA_THREADS];
    double acc = 0.0;
    for (unsigned i = threadIdx.x; i < parts; i += TT_CUDA_THREADS)
        acc += sq_part[i];
    s[threadIdx.x] = acc;
    block_sum(s);
    if (threadIdx.x == 0) sq_total = s[0];
}

/* sq_total = the sum of x (n) squared, queued */
static void sum_squares_async(const real *x, int64_t n)
{
    unsigned parts = sq_blocks(n);
    sq_pass1_kernel<<<parts, TT_CUDA_THREADS, 0, stream()>>>(x, n);
    TT_CUDA_CHECK(cudaGetLastError());
    sq_pass2_kernel<<<1, TT_CUDA_THREADS, 0, stream()>>>(parts);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* x (n); the host waits here for the stream, then has the value */
double tt_cuda_sum_squares(const real *x, int64_t n)
{
    if (n <= 0) return 0.0;
    sum_squares_async(x, n);
    double total = 0.0;
    /* async on our stream, then a wait: a plain cudaMemcpy would run on the legacy default
     * stream, which does not wait for the backend's non-blocking one */
    TT_CUDA_CHECK(cudaMemcpyFromSymbolAsync(&total, sq_total, sizeof total, 0,
                                            cudaMemcpyDeviceToHost, stream()));
    TT_CUDA_CHECK(cudaStreamSynchronize(stream()));
    return total;
}

/* The clipping factor of the last sum of squares, worked out by one thread in double as the CPU
 * does (sqrt and the division correctly rounded on both); 1 when not clipping, which leaves g as
 * it is (the CPU's scaling by a factor that rounds to 1 gives the same bits). */
static __device__ real clip_coef;

static __global__ void clip_norm_kernel(double *norm, double max_norm, int64_t n)
{
    double nrm = n > 0 ? sqrt(sq_total) : 0.0;
    *norm = nrm;
    clip_coef = max_norm > 0.0 && nrm > max_norm ? (real)(max_norm / (nrm + 1e-6)) : R(1);
}

/* g (n) = clip_coef * g, as scale_forward's kernel multiplies */
static __global__ void clip_scale_kernel(real *g, int64_t n)
{
    const real c = clip_coef;
    if (c == R(1)) return;
    GRID_LOOP(i, n) g[i] = c * g[i];
}

/* g (n) in place, norm: one double on the device; nothing comes back to the host */
void tt_cuda_clip_grads(real *g, int64_t n, double max_norm, double *norm)
{
    if (n > 0) sum_squares_async(g, n);
    clip_norm_kernel<<<1, 1, 0, stream()>>>(norm, max_norm, n);
    TT_CUDA_CHECK(cudaGetLastError());
    if (n <= 0) return;
    clip_scale_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(g, n);
    TT_CUDA_CHECK(cudaGetLastError());
}
