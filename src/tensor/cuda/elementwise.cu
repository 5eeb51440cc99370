/* cuda/elementwise.cu: add, scale, axpy, bias add, elementwise multiply, and the full sum.
 *   out = a + b       backward: da += dout, db += dout          (axpy with alpha 1)
 *   out = s * x       backward: dx += s * dout                  (axpy with alpha s)
 *   out = x + bias    backward: dx += dout, dbias += colsum(dout)
 *   out = a * b       backward: da += dout * b, db += dout * a
 *   out = sum x       backward: dx += dout * s                   (sum in double)
 * One thread per element, a grid stride apart. The two reductions are deterministic: a column
 * sum is one fixed tree per column over rows in a fixed order, the full sum a fixed two-pass
 * tree in double through a static device buffer. Nothing is saved. */
#include "tensor/cuda/common.cuh"

/* y (n) += alpha * x (n) */
static __global__ void axpy_kernel(real *y, real alpha, const real *x, int64_t n)
{
    GRID_LOOP(i, n) y[i] += alpha * x[i];
}

void tt_cuda_axpy(real *y, real alpha, const real *x, int64_t n)
{
    if (n <= 0) return;
    axpy_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(y, alpha, x, n);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* out (n) = a (n) + b (n) */
static __global__ void add_kernel(real *out, const real *a, const real *b, int64_t n)
{
    GRID_LOOP(i, n) out[i] = a[i] + b[i];
}

void tt_cuda_add_forward(real *out, const real *a, const real *b, int64_t n)
{
    if (n <= 0) return;
    add_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(out, a, b, n);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* out (n) = s * inp (n) */
static __global__ void scale_kernel(real *out, const real *inp, real s, int64_t n)
{
    GRID_LOOP(i, n) out[i] = s * inp[i];
}

void tt_cuda_scale_forward(real *out, const real *inp, real s, int64_t n)
{
    if (n <= 0) return;
    scale_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(out, inp, s, n);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* out (N,C) = inp (N,C) + bias (C), or the bias alone when inp is NULL; out may equal inp. A
 * thread's column follows its index, moved by the grid's stride mod C each time: one 64-bit
 * division a thread, not one an element (i % C was most of the kernel's time: ncu gave it
 * 2.7 ms of base's step on an H100, where writing its 3 GB takes about 1). */
static __global__ void bias_kernel(real *out, const real *inp, const real *bias, int64_t n, int C)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int step = (int)(stride % C);
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    for (int c = (int)(i % C); i < n; i += stride) {
        out[i] = inp ? inp[i] + bias[c] : bias[c];
        c += step;
        if (c >= C) c -= C;
    }
}

void tt_cuda_bias_forward(real *out, const real *inp, const real *bias, int64_t N, int C)
{
    int64_t n = N * C;
    if (n <= 0) return;
    bias_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(out, inp, bias, n, C);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* dbias (C) += the column sums of dout (N,C) (common.cuh's column sums). A thread's rows are
 * read 4 at a time, then added in order. */
static __global__ void __launch_bounds__(COL_W * COL_H)
colsum_kernel(real *dbias, const real *dout, int64_t N, int C)
{
    __shared__ real part[1][COL_H][COL_W];
    const int c = blockIdx.x * COL_W + threadIdx.x;
    real s = R(0);
    if (c < C) {
        const real *col = dout + c;
        int64_t r = threadIdx.y;
        for (; r + 3 * COL_H < N; r += 4 * COL_H) {
            const real a0 = col[r * C], a1 = col[(r + COL_H) * C], a2 = col[(r + 2 * COL_H) * C],
                       a3 = col[(r + 3 * COL_H) * C];
            s += a0;
            s += a1;
            s += a2;
            s += a3;
        }
        for (; r < N; r += COL_H) s += col[r * C];
    }
    part[0][threadIdx.y][threadIdx.x] = s;
    col_tree(part, 1);
    if (threadIdx.y == 0 && c < C) dbias[c] += part[0][0][threadIdx.x];
}

void tt_cuda_bias_backward(real *dbias, const real *dout, int64_t N, int C)
{
    if (N <= 0 || C <= 0) return;
    colsum_kernel<<<(C + COL_W - 1) / COL_W, dim3(COL_W, COL_H), 0, stream()>>>(dbias, dout, N,
                                                                                  C);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* out (n) = a (n) * b (n) */
static __global__ void mul_kernel(real *out, const real *a, const real *b, int64_t n)
{
    GRID_LOOP(i, n) out[i] = a[i] * b[i];
}

void tt_cuda_mul_forward(real *out, const real *a, const real *b, int64_t n)
{
    if (n <= 0) return;
    mul_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(out, a, b, n);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* da (n) += dout * b, db (n) += dout * a; either may be NULL. When da == db (x * x) both
 * contributions land, da's first, as on the CPU: the pointers may alias, so db is re-read. */
static __global__ void mul_backward_kernel(real *da, real *db, const real *dout, const real *a,
                                           const real *b, int64_t n)
{
    GRID_LOOP(i, n)
    {
        if (da) da[i] += dout[i] * b[i];
        if (db) db[i] += dout[i] * a[i];
    }
}

void tt_cuda_mul_backward(real *da, real *db, const real *dout, const real *a, const real *b,
                          int64_t n)
{
    if (n <= 0 || (!da && !db)) return;
    mul_backward_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(da, db, dout, a, b, n);
    TT_CUDA_CHECK(cudaGetLastError());
}

/* The full sum in two fixed passes: sum_blocks(n) blocks (a function of n only, never of the
 * GPU) each sum a grid-strided share in double and reduce it in a fixed tree into
 * sum_part[block]; then one block adds the parts in a fixed tree. sum_part is a static device
 * buffer: kernels on the one stream run in order, so calls never overlap. */
#define SUM_MAX_BLOCKS 1024
static __device__ double sum_part[SUM_MAX_BLOCKS];

static unsigned sum_blocks(int64_t n)
{
    int64_t b = (n + 4 * TT_CUDA_THREADS - 1) / (4 * TT_CUDA_THREADS);
    return (unsigned)(b < SUM_MAX_BLOCKS ? b : SUM_MAX_BLOCKS);
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

/* sum_part[block] = the sum of the block's share of inp (n) */
static __global__ void sum_pass1_kernel(const real *inp, int64_t n)
{
    __shared__ double s[TT_CUDA_THREADS];
    double acc = 0.0;
    GRID_LOOP(i, n) acc += (double)inp[i];
    s[threadIdx.x] = acc;
    block_sum(s);
    if (threadIdx.x == 0) sum_part[blockIdx.x] = s[0];
}

/* out (1) = the sum of sum_part[0 .. parts) */
static __global__ void sum_pass2_kernel(real *out, unsigned parts)
{
    __shared__ double s[TT_CUDA_THREADS];
    double acc = 0.0;
    for (unsigned i = threadIdx.x; i < parts; i += TT_CUDA_THREADS)
        acc += sum_part[i];
    s[threadIdx.x] = acc;
    block_sum(s);
    if (threadIdx.x == 0) out[0] = (real)s[0];
}

/* out (1), inp (n); accumulated in double so float32 sums of large tensors stay accurate */
void tt_cuda_sum_forward(real *out, const real *inp, int64_t n)
{
    unsigned parts = sum_blocks(n);
    if (parts > 0) {
        sum_pass1_kernel<<<parts, TT_CUDA_THREADS, 0, stream()>>>(inp, n);
        TT_CUDA_CHECK(cudaGetLastError());
    }
    sum_pass2_kernel<<<1, TT_CUDA_THREADS, 0, stream()>>>(out, parts); /* n == 0: out = 0 */
    TT_CUDA_CHECK(cudaGetLastError());
}

/* dinp (n) += dout[0] * s: dout (1) is a device value, read by every thread */
static __global__ void sum_backward_kernel(real *dinp, const real *dout, real s, int64_t n)
{
    real g = dout[0] * s;
    GRID_LOOP(i, n) dinp[i] += g;
}

void tt_cuda_sum_backward(real *dinp, const real *dout, real s, int64_t n)
{
    if (n <= 0) return;
    sum_backward_kernel<<<tt_cuda_blocks(n), TT_CUDA_THREADS, 0, stream()>>>(dinp, dout, s, n);
    TT_CUDA_CHECK(cudaGetLastError());
}
