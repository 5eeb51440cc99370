/* cuda_emu/include/mma.h: wmma as the emulator gives it (cuda_runtime.h): every lane's fragment
 * holds the whole matrix (rows x columns, row-major), which is what the fragments of a warp
 * hold together, so code that treats a fragment as opaque (loads, stores, element-wise ops)
 * computes the same. The product reads TF32 inputs as tensor cores do (the 13 low mantissa
 * bits ignored: a value not rounded by __float_to_tf32 is truncated) and sums in float in k
 * order. Loads and stores check CUDA's rules: a 256-bit aligned pointer and a leading
 * dimension that is a multiple of 16 bytes. Loads, stores and products are the warp's
 * together, as on a GPU: every lane meets at each (else the emulator reports the divergence),
 * so no lane's store lands before another lane's load of the same call. */
#ifndef TT_CUDA_EMU_MMA_H
#define TT_CUDA_EMU_MMA_H

#include "cuda_runtime.h"

#include <stdint.h>
#include <string.h>

namespace emu {
[[noreturn]] void fail(const char *fmt, ...);
/* mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 (attention_mma.cu) with the fragments
 * PTX documents, lane l = 4 g + t: a[0..3] hold A (16 x 8) at (g, t), (g + 8, t), (g, t + 4),
 * (g + 8, t + 4); b[0..1] B (8 x 8) at (t, g), (t + 4, g); c[0..3] C at (g, 2t), (g, 2t + 1),
 * (g + 8, 2t), (g + 8, 2t + 1). c += A B once every lane of the warp has called it, operands
 * read as TF32 (wmma's tf32_read below) and summed in k order, like mma_sync. */
void mma_m16n8k8_tf32(float c[4], const uint32_t a[4], const uint32_t b[2]);
}

namespace nvcuda {
namespace wmma {
struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
namespace precision {
struct tf32 {};
} // namespace precision
enum layout_t { mem_row_major, mem_col_major };

/* round to nearest, ties away from zero, to 10 explicit mantissa bits (cvt.rna.tf32.f32) */
static inline float __float_to_tf32(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    if ((b & 0x7f800000u) != 0x7f800000u) b = (b + 0x1000u) & ~0x1fffu;
    memcpy(&x, &b, sizeof x);
    return x;
}

template <typename Use, int M, int N, int K> struct shape;
template <int M, int N, int K> struct shape<matrix_a, M, N, K> {
    static constexpr int rows = M, cols = K;
};
template <int M, int N, int K> struct shape<matrix_b, M, N, K> {
    static constexpr int rows = K, cols = N;
};
template <int M, int N, int K> struct shape<accumulator, M, N, K> {
    static constexpr int rows = M, cols = N;
};

template <typename Use, int M, int N, int K, typename T, typename Layout = void> struct fragment {
    static constexpr int rows = shape<Use, M, N, K>::rows, cols = shape<Use, M, N, K>::cols;
    static constexpr int num_elements = rows * cols;
    float x[num_elements];
};

static inline void check_access(const void *p, unsigned ldm, const char *what)
{
    if ((uintptr_t)p % 32) emu::fail("wmma %s: pointer %p is not 256-bit aligned", what, p);
    if (ldm % 4)
        emu::fail("wmma %s: leading dimension %u is not a multiple of 4 floats", what, ldm);
}

template <typename Use, int M, int N, int K, typename T, typename L>
static inline void fill_fragment(fragment<Use, M, N, K, T, L> &f, float v)
{
    for (int e = 0; e < f.num_elements; e++) f.x[e] = v;
}

/* what a tensor core reads of a TF32 operand: the top 19 bits */
static inline float tf32_read(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    b &= ~0x1fffu;
    memcpy(&x, &b, sizeof x);
    return x;
}

template <typename Use, int M, int N, int K, typename T, typename L>
static inline void load_matrix_sync(fragment<Use, M, N, K, T, L> &f, const float *p, unsigned ldm)
{
    typedef fragment<Use, M, N, K, T, L> F;
    check_access(p, ldm, "load_matrix_sync");
    __syncwarp();
    for (int r = 0; r < F::rows; r++)
        for (int c = 0; c < F::cols; c++)
            f.x[r * F::cols + c] = std::is_same_v<L, col_major> ? p[c * ldm + r] : p[r * ldm + c];
}

template <int M, int N, int K, typename TA, typename LA, typename TB, typename LB>
static inline void mma_sync(fragment<accumulator, M, N, K, float> &d,
                            const fragment<matrix_a, M, N, K, TA, LA> &a,
                            const fragment<matrix_b, M, N, K, TB, LB> &b,
                            const fragment<accumulator, M, N, K, float> &c)
{
    __syncwarp();
    float out[M * N];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float acc = c.x[i * N + j];
            for (int k = 0; k < K; k++)
                acc += tf32_read(a.x[i * K + k]) * tf32_read(b.x[k * N + j]);
            out[i * N + j] = acc;
        }
    memcpy(d.x, out, sizeof out);
}

template <int M, int N, int K>
static inline void store_matrix_sync(float *p, const fragment<accumulator, M, N, K, float> &f,
                                     unsigned ldm, layout_t layout)
{
    check_access(p, ldm, "store_matrix_sync");
    __syncwarp();
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++)
            (layout == mem_col_major ? p[c * ldm + r] : p[r * ldm + c]) = f.x[r * N + c];
}
} // namespace wmma
} // namespace nvcuda

#endif
