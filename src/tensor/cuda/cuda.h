/* cuda.h: the CUDA backend (make CUDA=1 only): one launcher per slot of tt_backend, with the
 * slot's exact contract (tensor/kernels.h, whose list declares them as tt_cuda_NAME: outputs
 * first, backward kernels ADD into gradients, any gradient output may be NULL where the list
 * says so), every pointer a device pointer.
 * Each launcher queues its kernels on tt_cuda_stream() and returns without synchronising: the
 * host waits only where a value comes back (to_host, sum_squares). Reductions are
 * deterministic: a fixed tree per block and blocks combined in a fixed order, never float
 * atomics, so two runs with one seed give the same bits. The math the CPU and the GPU share
 * (Philox, GELU, the optimizers' updates) is written once (tensor/philox.h,
 * tensor/kernel_math.h) and compiled for both.
 *
 * Included by .cu files (C++) and by backend.c (C): the guard keeps C linkage on both sides. */
#ifndef TT_CUDA_H
#define TT_CUDA_H

#include "tensor/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The CUDA table (backend.cu). */
extern const tt_backend tt_cuda_backend;

/* Stop with the call, file, line and CUDA's message on any error (STYLE.md, errors 3). */
#define TT_CUDA_CHECK(call)                                                                    \
    do {                                                                                       \
        int tt_cuda_rc_ = (int)(call);                                                         \
        if (tt_cuda_rc_) tt_cuda_fatal(#call, tt_cuda_rc_, __FILE__, __LINE__);                \
    } while (0)
#define TT_CUBLAS_CHECK(call)                                                                  \
    do {                                                                                       \
        int tt_cublas_rc_ = (int)(call);                                                       \
        if (tt_cublas_rc_) tt_cublas_fatal(#call, tt_cublas_rc_, __FILE__, __LINE__);          \
    } while (0)
TT_NORETURN void tt_cuda_fatal(const char *call, int rc, const char *file, int line);
TT_NORETURN void tt_cublas_fatal(const char *call, int rc, const char *file, int line);

/* The stream every kernel of the backend runs on (an opaque cudaStream_t, as void * so that C
 * callers need no CUDA header). */
void *tt_cuda_stream(void);
/* Work beside work (backend.cu): in a step of a captured run, between side_begin and
 * side_end the launchers queue on a second stream that first waits for the stream's work so
 * far, and side_join, after the stream's own share, makes the stream wait for it; anywhere
 * else the three do nothing and all stays on the stream. A slot that forks joins before it
 * returns (tt_cuda_beside, below, brackets both shares). */
void tt_cuda_side_begin(void);
void tt_cuda_side_end(void);
void tt_cuda_side_join(void);

/* What changes from one training step to the next in a replayed step (backend.cu's step
 * bracket: CUDA graphs): the dropout stream's offset from the captured step's cursor, and the
 * optimizers' scalars. While a step is captured, kernels that draw dropout masks or update
 * parameters read them from the device copy that tt_cuda_step_vary returns (the graph's first
 * node copies the host's values in on every replay); outside captured steps it returns NULL
 * and the kernels use the values they were launched with. */
typedef struct tt_cuda_vary {
    uint64_t rng_delta; /* added to every dropout cursor's counter */
    tt_adamw_scalars adamw;
    tt_sgd_scalars sgd;
} tt_cuda_vary;
const tt_cuda_vary *tt_cuda_step_vary(void);

/* Launch geometry: blocks of TT_CUDA_THREADS threads, enough to cover n with one element each,
 * capped (kernels loop with a grid stride past the cap). */
#define TT_CUDA_THREADS 256
#define TT_CUDA_MAX_BLOCKS 65535
static inline unsigned tt_cuda_blocks(int64_t n)
{
    int64_t b = (n + TT_CUDA_THREADS - 1) / TT_CUDA_THREADS;
    return (unsigned)(b < 1 ? 1 : b > TT_CUDA_MAX_BLOCKS ? TT_CUDA_MAX_BLOCKS : b);
}

/* The kernels: void tt_cuda_NAME(PARAMS) for each entry of tensor/kernels.h, and the slots
 * outside the list that the CUDA table fills with these launchers (backend.h). */
#define TT_CUDA_KERNEL(name, params, args) void tt_cuda_##name params;
TT_KERNELS(TT_CUDA_KERNEL)
#undef TT_CUDA_KERNEL
void tt_cuda_fill(real *x, real value, int64_t n);
size_t tt_cuda_attention_scratch(const tt_attn_desc *a, bool backward);
double tt_cuda_sum_squares(const real *x, int64_t n);

/* The attention kernels' arithmetic for the products Q K^T, P V and their gradients: the
 * float cores (float32 or float64 FMAs, float64's only kind), their operands staged by the
 * threads (WIDE) or by cp.async while the previous chunk is multiplied (PIPE; attention.cu;
 * backend.cu's set_matmul_precision picks it at highest, MMA at high); three TF32
 * tensor-core products of float32 split in a high and a low TF32 part (about float32's
 * accuracy); or one TF32 product (attention_tc.cu: wmma over 32-row blocks with their score
 * rows in shared memory).
 * MMA3 and MMA are the last two through mma.sync with each warp's rows and scores in
 * registers (attention_mma.cu: two passes over the keys, flash attention's way; head sizes up
 * to 64, past that attention_tc.cu's). The softmax, masks and dropout are the same in all six.
 * Tests, bench_attention and TT_CUDA_ATTN choose one; it holds until changed. */
typedef enum {
    TT_CUDA_ATTN_PIPE,
    TT_CUDA_ATTN_TF32X3,
    TT_CUDA_ATTN_TF32,
    TT_CUDA_ATTN_WIDE,
    TT_CUDA_ATTN_MMA3,
    TT_CUDA_ATTN_MMA
} tt_cuda_attn_math;
void tt_cuda_attention_set_math(tt_cuda_attn_math m);
tt_cuda_attn_math tt_cuda_attention_math(void);
/* blocks[0..2]: how many blocks of the forward, dq and dkv kernels of the arithmetic now set
 * one SM holds at once for shape a, 0 where the runtime cannot say; call it after those kernels
 * have run at a's T (their shared-memory limit is raised at launch). bench_attention prints it:
 * whether the occupancy a tiling was designed for is what the GPU gives. */
void tt_cuda_attention_residency(const tt_attn_desc *a, int blocks[3]);

#ifdef __cplusplus
}

/* A slot's two shares of work: side() beside main() (tt_cuda_side_begin) where there is work
 * for both, else one after the other on the stream. */
template <typename Side, typename Main>
static inline void tt_cuda_beside(bool both, Side side, Main main)
{
    if (both) tt_cuda_side_begin();
    side();
    if (both) tt_cuda_side_end();
    main();
    if (both) tt_cuda_side_join();
}
#endif

#endif
