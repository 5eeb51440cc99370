/* backend.h: the per-device kernel table. Autograd reaches every kernel through this table, so a
 * device adds one file that fills a tt_backend and nothing above src/tensor changes.
 *
 * The device boundary: everything above src/tensor treats memory the table allocated as memory
 * the host cannot touch. It reaches it only through the table's slots (kernels, zero, copy,
 * to_host, from_host) or helpers built on them (tt_params_to_host / tt_params_from_host);
 * it may compute addresses inside it (p + offset), never dereference, memcpy or fwrite them.
 * The guard device (tensor/guard/) enforces this in the tests: CPU kernels behind memory that
 * is mprotect'ed PROT_NONE outside every call.
 *
 * The kernels, their contracts and the conventions they share (outputs first, backward kernels
 * add into gradients) are listed once in tensor/kernels.h; the other slots are below. */
#ifndef TT_BACKEND_H
#define TT_BACKEND_H

#include "tensor/kernels.h"
#include "tensor/rng.h"
#include "tensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sizes of a fused attention call: B batches of T positions, NH heads of width HS; row strides
 * of q, k, v and out (>= NH*HS: a packed [B,T,3D] qkv tensor is read in place with ld 3D). */
typedef struct tt_attn_desc {
    int B, T, NH, HS;
    int ldq, ldk, ldv, ldo;
    real scale; /* multiplies the scores */
    bool causal;
    real p; /* dropout on the weights, [0,1) */
    bool full; /* tests only: a causal head computes the masked keys too (CPU; same results) */
    bool fresh; /* backward: dq, dk, dv are uninitialised and written, not added to */
} tt_attn_desc;

/* One gemm, as linear_backward takes it: C = alpha op(A) op(B) + beta C, row-major, no batch. */
typedef struct tt_gemm_op {
    bool ta, tb;
    int M, N, K;
    real alpha;
    const real *A;
    int lda;
    const real *B;
    int ldb;
    real beta;
    real *C;
    int ldc;
} tt_gemm_op;

/* One AdamW update (torch.optim.AdamW, amsgrad off; train/optim/optim.h states the rule), its
 * scalars worked out in double on the host and rounded once to real: p = p * decay;
 * m = m * b1 + a1 * g; v = v * b2 + a2 * g * g; p = p + -step * m / (sqrt(v) / bc2_sqrt + eps). */
typedef struct tt_adamw_scalars {
    real decay, b1, a1, b2, a2, step, bc2_sqrt, eps;
} tt_adamw_scalars;

/* One SGD update (torch.optim.SGD, dampening 0, nesterov off): d = g + wd * p (wd != 0); with
 * use_buf, buf = d at the first step else buf * mu + d, and d = buf; p = p + neg_lr * d. */
typedef struct tt_sgd_scalars {
    real wd, mu, neg_lr;
    bool first, use_buf;
} tt_sgd_scalars;

typedef struct tt_backend {
    const char *name;
    /* 0 when the device can run in this process; else -1 with err naming the device, what is
     * missing and a HINT (a CUDA build on a machine without a GPU). */
    int (*available)(char *err, size_t errlen);
    /* The device's own memory: 0 with its free and total bytes, or -1 when it has none apart
     * from the host's (the CPU, the guard device): the memory check before a run
     * (train/run/budget.c) then counts everything against the host's memory. */
    int (*mem_info)(size_t *free_bytes, size_t *total_bytes);

    /* memory */
    void *(*alloc)(size_t bytes); /* aborts with the size on failure */
    void (*free)(void *p);
    void (*zero)(void *p, size_t bytes);
    void (*copy)(void *dst, const void *src, size_t bytes);      /* device to device */
    void (*to_host)(void *dst, const void *src, size_t bytes);   /* device to host */
    void (*from_host)(void *dst, const void *src, size_t bytes); /* host to device */
    void (*fill)(real *x, real value, int64_t n);

    /* threads for the kernels and the BLAS; 0 means all cores */
    void (*set_threads)(int n);
    int (*get_threads)(void);
    /* PyTorch's matmul precision: high lets gemms use TF32 tensor cores (GPUs); highest keeps
     * float32 (the default). A device without such a mode ignores it. */
    void (*set_matmul_precision)(bool high);

    /* the kernels, one slot each: void (*NAME)(PARAMS) for every entry of tensor/kernels.h */
#define TT_KERNEL_SLOT(name, params, args) void(*name) params;
    TT_KERNELS(TT_KERNEL_SLOT)
#undef TT_KERNEL_SLOT

    /* Bytes of device scratch one attention_forward (or, with backward, one
     * attention_backward) call of these sizes needs: the caller allocates them. No memory is
     * touched. */
    size_t (*attention_scratch)(const tt_attn_desc *a, bool backward);
    /* sum of x[i]^2 (n) accumulated in double, returned to the host (a device synchronises
     * here: never inside a step). The same value at any thread count. */
    double (*sum_squares)(const real *x, int64_t n);

    /* A training step's bracket (train/run/loop.c). step_begin before the step's first call
     * (r: the step's dropout stream, where its draws start), step_end after its last; in
     * between, no host read (to_host, sum_squares) and no allocation, so a device may record
     * the calls once and replay them (CUDA graphs), and the guard device asserts both.
     * step_setup at start-up, outside steps: the most bytes a step copies in with from_host
     * (a device stages them in pinned memory) and whether it may replay; setup(0, false)
     * releases what it holds. */
    void (*step_setup)(size_t staging_bytes, bool replay);
    void (*step_begin)(const tt_rng *r);
    void (*step_end)(void);
} tt_backend;

#define TT_IGNORE_INDEX (-100)

/* The table of a device; aborts with a hint if that backend was not built in (an internal
 * error: a user's choice of device goes through tt_backend_open first). */
const tt_backend *tt_backend_get(tt_device dev);
/* The table of a device the user asked for, checked: NULL with err ("device \"cuda\": ...
 * HINT: ...") when this build lacks it or it cannot run here. */
const tt_backend *tt_backend_open(tt_device dev, char *err, size_t errlen);
const char *tt_device_name(tt_device dev);
/* A malloc'ed host copy of a tensor on the table's device (outside training steps: it
 * allocates); free() it. */
void *tt_tensor_host_copy(const tt_backend *be, const tt_tensor *t);

extern const tt_backend tt_cpu_backend;
extern const tt_backend tt_guard_backend;

/* Kernel times on the CPU (cpu/timed.c; bench_step --kernel-times). After
 * tt_cpu_time_kernels, tt_backend_get and tt_backend_open give for TT_CPU a table whose kernel
 * slots (and zero, copy, fill) time each call on the caller, entry to return, and count it; a
 * run takes its table at start-up, so call it first. tt_kernel_times fills out with the slots
 * called since the last reset (at most `most`, in the table's order) and returns how many;
 * reset: start the counts again. */
typedef struct tt_kernel_time {
    const char *name;
    int64_t calls;
    double seconds;
} tt_kernel_time;
void tt_cpu_time_kernels(void);
const tt_backend *tt_cpu_table(void); /* the CPU's table, timed or not (backend.c) */
int tt_kernel_times(tt_kernel_time *out, int most, bool reset);

#ifdef __cplusplus
}
#endif

#endif
