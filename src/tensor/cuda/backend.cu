/* cuda/backend.cu: device memory, the streams and the cuBLAS handles (the gemms themselves are
 * matmul.cu's), the training step's bracket (pinned staging, CUDA graphs) and the CUDA kernel
 * table (make CUDA=1 only). Every kernel runs on one stream; the host waits for it only where
 * a value comes back (to_host, sum_squares) or host memory handed in outside a step may be
 * reused (from_host). */
#include "tensor/call_log.h"
#include "tensor/cuda/blas.cuh"

#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <type_traits>

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

/* A second stream for work that needs nothing from the work beside it: in a layer's backward,
 * linear's dw and db beside its dx, LayerNorm's dweight and dbias beside its dinp. On small
 * shapes each of those fills a fraction of the GPU, and a graph's kernels run back to back, so
 * two at once take less time than one after the other. side_begin() makes `side` wait for the
 * stream's work so far and sends the kernels and gemms that follow there (its own cuBLAS
 * handle and workspace, the same math mode), side_end() sends them back, and side_join(),
 * after the stream's own share, makes the stream wait for side's: every slot joins before it
 * returns, so the stream alone orders the step. The two shares write different outputs from
 * inputs neither writes, each in its fixed order, so the bits are the one-stream order's.
 * Only in the steps of a captured run (side_begin, below). TT_CUDA_STREAMS=1 in the
 * environment keeps everything on the stream (to compare their times). */
static cudaStream_t side, current; /* current: where the backend's kernels go now */
static cublasHandle_t blas_side;
static cudaEvent_t side_fork, side_done;
static bool two_streams;

static void *workspace, *workspace_side; /* blas's and blas_side's (BLAS_WORKSPACE, blas.cuh) */

/* a cuBLAS handle on st, with its own workspace *ws */
static void blas_on(cublasHandle_t *h, cudaStream_t st, void **ws)
{
    TT_CUBLAS_CHECK(cublasCreate(h));
    TT_CUBLAS_CHECK(cublasSetStream(*h, st)); /* before the workspace: it resets it */
    TT_CUDA_CHECK(cudaMalloc(ws, BLAS_WORKSPACE));
    TT_CUBLAS_CHECK(cublasSetWorkspace(*h, *ws, BLAS_WORKSPACE));
}

static cublasLtHandle_t lt; /* a Linear's forward (matmul.cu); NULL with TT_CUDA_LT=0 */
static bool gemm_tf32;      /* matmul_precision "high": cuBLASLt's compute type is TF32 */

/* The streams, the cuBLAS handles and the events, made on first use (outside any step: the
 * run's first allocation comes before its first step). */
static void ensure_init(void)
{
    if (blas) return;
    TT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    blas_on(&blas, stream, &workspace);
    const char *l = getenv("TT_CUDA_LT");
    if (!(l && !strcmp(l, "0"))) TT_CUBLAS_CHECK(cublasLtCreate(&lt));
    current = stream;
    const char *e = getenv("TT_CUDA_STREAMS");
    two_streams = !(e && !strcmp(e, "1"));
    if (!two_streams) return;
    TT_CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    blas_on(&blas_side, side, &workspace_side);
    TT_CUDA_CHECK(cudaEventCreateWithFlags(&side_fork, cudaEventDisableTiming));
    TT_CUDA_CHECK(cudaEventCreateWithFlags(&side_done, cudaEventDisableTiming));
}

void *tt_cuda_stream(void)
{
    ensure_init();
    return (void *)current;
}

tt_cuda_blas_now tt_cuda_blas(void)
{
    ensure_init();
    const bool main = current == stream;
    return {main ? blas : blas_side, main ? workspace : workspace_side, current, lt, gemm_tf32};
}

/* ---- the training step's bracket: pinned staging and CUDA graphs ------------------------------
 * Inside a step (step_begin .. step_end), from_host copies the caller's bytes into a pinned
 * staging buffer and queues the copy from there: no wait, and a copy a graph can hold. With
 * replay on (step_setup), the second step is captured: its calls are recorded on the stream as
 * a CUDA graph (not run), which step_end instantiates and launches. Every later step runs the
 * host's code as before (autograd's bookkeeping is cheap), but each slot only notes its call:
 * what varies from step to step goes to pinned memory (the batch into the staging buffer at
 * the captured offsets, the optimizer's scalars and the dropout offset into `vary`, which the
 * graph's first node copies to the device), and the rest (the kernel, its pointers, sizes and
 * constants) is hashed and must equal the captured call's, else the graph would compute
 * something else and the program stops. step_end then launches the graph. The first step runs
 * eagerly (cuBLAS and the kernels' lazy set-up must not happen inside a capture). */
enum step_mode { EAGER, CAPTURE, REPLAY };

static struct {
    bool replay, in_step;
    enum step_mode mode;       /* of the step under way; EAGER outside steps */
    int64_t steps;             /* begun since step_setup */
    char *staging;             /* pinned: a step's from_host bytes, one copy after another */
    size_t staging_cap, staged;
    tt_cuda_vary *vary_host;   /* pinned; vary_dev is its device copy */
    tt_cuda_vary *vary_dev;
    cudaEvent_t done;          /* recorded at every step's end: pinned memory free to reuse */
    uint64_t captured_counter; /* the dropout cursor at the captured step's start */
    cudaGraphExec_t exec;      /* the captured step; NULL before */
    tt_call_log log;           /* the captured step's calls (call_log.h) */
} st;

const tt_cuda_vary *tt_cuda_step_vary(void)
{
    return st.mode == CAPTURE ? st.vary_dev : NULL;
}

/* The second stream only in a run whose steps are captured: in its graph a fork and a join
 * are two edges, which cost the host nothing on every replay. The eager step before the capture
 * forks too, as a warm-up: the side handle's first gemms (cuBLAS's lazy set-up, the kernels'
 * loading) run there and not inside the capture, as for the stream's handle. A run launched
 * call by call (cuda_graphs false, data parallel) and the calls outside steps stay on the
 * stream: there each fork and join would be two more API calls for the host, which a small
 * model's eager step is already bound by, and a big model's gemms fill the GPU alone. */
static bool forking;

void tt_cuda_side_begin(void)
{
    ensure_init();
    TT_ASSERT_MSG(current == stream && !forking, "cuda: side_begin on the side stream");
    forking = two_streams && st.in_step && st.replay;
    if (!forking) return;
    TT_CUDA_CHECK(cudaEventRecord(side_fork, stream));
    TT_CUDA_CHECK(cudaStreamWaitEvent(side, side_fork, 0));
    current = side;
}

void tt_cuda_side_end(void) { current = stream; }

void tt_cuda_side_join(void)
{
    TT_ASSERT_MSG(current == stream, "cuda: side_join before side_end");
    if (!forking) return;
    forking = false;
    TT_CUDA_CHECK(cudaEventRecord(side_done, side));
    TT_CUDA_CHECK(cudaStreamWaitEvent(stream, side_done, 0));
}

template <typename T> static void fold(uint64_t *h, T v)
{
    static_assert(std::is_arithmetic_v<T> || std::is_pointer_v<T>, "a slot argument of a type "
                  "fold does not know: give it an overload");
    *h = tt_hash_bytes(*h, &v, sizeof v);
}

static void fold(uint64_t *h, tt_rng r) { *h = tt_hash_rng(*h, r); }
static void fold(uint64_t *h, const tt_attn_desc *a) { *h = tt_hash_attn_desc(*h, a); }
static void fold(uint64_t *h, const tt_gemm_op *g) { *h = tt_hash_gemm_op(*h, g); }

/* the optimizers' scalars vary (the rate, the bias corrections): they go to vary */
static void fold(uint64_t *h, const tt_adamw_scalars *s)
{
    (void)h;
    st.vary_host->adamw = *s;
}

static void fold(uint64_t *h, const tt_sgd_scalars *s)
{
    st.vary_host->sgd = *s;
    *h = tt_hash_sgd(*h, s);
}

/* the call's hash: kept while capturing, compared while replaying */
template <typename... A> static void note(const void *slot, A... a)
{
    uint64_t h = tt_hash_bytes(TT_HASH_START, &slot, sizeof slot);
    (fold(&h, a), ...);
    TT_ASSERT_MSG(tt_call_log_note(&st.log, h, st.mode == CAPTURE), "cuda: call %lld of this "
                  "training step differs from the captured step's (another kernel, other "
                  "memory or other sizes), so its CUDA graph cannot replay it: a bug. HINT: set "
                  "\"cuda_graphs\": false to launch every call", (long long)st.log.n - 1);
}

/* A slot as the step bracket sees it: noted inside a captured or replayed step, launched
 * unless replaying. STEP(f) is the table's entry for launcher f. */
template <auto f> struct step_call;
template <typename... A, void (*f)(A...)> struct step_call<f> {
    static void call(A... a)
    {
        if (st.mode != EAGER) note((const void *)f, a...);
        if (st.mode != REPLAY) f(a...);
    }
};
#define STEP(f) step_call<&f>::call

/* host reads, allocation: never in a captured or replayed step */
static void outside_graphs(const char *what)
{
    TT_ASSERT_MSG(st.mode == EAGER, "cuda: %s inside a training step that is captured as a "
                  "CUDA graph: a bug (backend.h's step bracket). HINT: set \"cuda_graphs\": "
                  "false", what);
}

static void release_graph(void)
{
    if (st.exec) TT_CUDA_CHECK(cudaGraphExecDestroy(st.exec));
    st.exec = NULL;
    st.log.n = st.log.n_kept = 0;
}

static void cuda_step_setup(size_t staging_bytes, bool replay)
{
    TT_ASSERT_MSG(!st.in_step, "cuda: step_setup inside a training step");
    ensure_init();
    release_graph();
    if (st.staging) TT_CUDA_CHECK(cudaFreeHost(st.staging)); /* waits for the device */
    st.staging = NULL;
    st.staging_cap = 0;
    st.steps = 0;
    st.replay = replay && staging_bytes > 0;
    if (!staging_bytes) return;
    TT_CUDA_CHECK(cudaHostAlloc((void **)&st.staging, staging_bytes, cudaHostAllocDefault));
    st.staging_cap = staging_bytes;
    if (!st.vary_host) { /* small, kept for the process's later runs */
        TT_CUDA_CHECK(cudaHostAlloc((void **)&st.vary_host, sizeof *st.vary_host,
                                    cudaHostAllocDefault));
        TT_CUDA_CHECK(cudaMalloc((void **)&st.vary_dev, sizeof *st.vary_dev));
        TT_CUDA_CHECK(cudaEventCreateWithFlags(&st.done, cudaEventDisableTiming));
        st.log.kept = (uint64_t *)tt_xmalloc(TT_CALL_LOG_MAX * sizeof *st.log.kept);
    }
    memset(st.vary_host, 0, sizeof *st.vary_host);
}

static void cuda_step_begin(const tt_rng *r)
{
    TT_ASSERT_MSG(!st.in_step, "cuda: step_begin inside a training step");
    /* the last step's copies out of pinned memory are done before it is written again */
    if (st.vary_host) TT_CUDA_CHECK(cudaEventSynchronize(st.done));
    st.in_step = true;
    st.staged = 0;
    st.mode = EAGER;
    if (st.exec) {
        st.mode = REPLAY;
        st.vary_host->rng_delta = r->counter - st.captured_counter;
    } else if (st.replay && st.steps == 1) {
        st.mode = CAPTURE;
        st.captured_counter = r->counter;
        st.vary_host->rng_delta = 0;
        TT_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        /* the graph's first node: this step's varying values, on every launch */
        TT_CUDA_CHECK(cudaMemcpyAsync(st.vary_dev, st.vary_host, sizeof *st.vary_dev,
                                      cudaMemcpyHostToDevice, stream));
    }
    st.steps++;
}

static void cuda_step_end(void)
{
    TT_ASSERT_MSG(st.in_step, "cuda: step_end without step_begin");
    if (st.mode == CAPTURE) {
        cudaGraph_t graph;
        TT_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
        TT_CUDA_CHECK(cudaGraphInstantiate(&st.exec, graph, 0));
        TT_CUDA_CHECK(cudaGraphDestroy(graph));
    }
    if (st.mode != EAGER) {
        const int64_t made = st.log.n;
        TT_ASSERT_MSG(tt_call_log_end(&st.log, st.mode == CAPTURE), "cuda: this training step "
                      "made %lld calls, the captured one %lld, so its CUDA graph cannot replay "
                      "it: a bug. HINT: set \"cuda_graphs\": false to launch every call",
                      (long long)made, (long long)st.log.n_kept);
    }
    if (st.mode != EAGER) TT_CUDA_CHECK(cudaGraphLaunch(st.exec, stream));
    if (st.vary_host) TT_CUDA_CHECK(cudaEventRecord(st.done, stream));
    st.in_step = false;
    st.mode = EAGER;
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
    outside_graphs("an allocation");
    ensure_init();
    void *p = NULL;
    cudaError_t rc = cudaMalloc(&p, bytes ? bytes : 64);
    TT_ASSERT_MSG(rc == cudaSuccess, "out of memory: could not allocate %zu bytes on the GPU "
                  "(cudaMalloc: %s)", bytes, cudaGetErrorString(rc));
    return p;
}

static void cuda_free(void *p)
{
    outside_graphs("a free");
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
    outside_graphs("a host read (to_host)");
    TT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
    TT_CUDA_CHECK(cudaStreamSynchronize(stream));
}

/* The caller may reuse or free its host buffer as soon as this returns: outside a step the
 * copy is waited for; inside one the bytes are staged in pinned memory (64-byte aligned, one
 * after another) and copied from there without a wait. */
static void cuda_from_host(void *dst, const void *src, size_t bytes)
{
    if (!st.in_step || !st.staging) {
        outside_graphs("an unstaged copy in (step_setup gave no staging buffer)");
        TT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
        TT_CUDA_CHECK(cudaStreamSynchronize(stream));
        return;
    }
    size_t at = (st.staged + 63) & ~(size_t)63;
    TT_ASSERT_MSG(at + bytes <= st.staging_cap, "cuda: a training step copies in %zu bytes, "
                  "more than the %zu its step_setup announced", at + bytes, st.staging_cap);
    memcpy(st.staging + at, src, bytes);
    st.staged = at + bytes;
    if (st.mode != EAGER) note((const void *)cuda_from_host, dst, bytes, at);
    if (st.mode != REPLAY)
        TT_CUDA_CHECK(cudaMemcpyAsync(dst, st.staging + at, bytes, cudaMemcpyHostToDevice,
                                      stream));
}

static double cuda_sum_squares(const real *x, int64_t n)
{
    outside_graphs("a host read (sum_squares)");
    return tt_cuda_sum_squares(x, n);
}

/* the GPU schedules its own threads; the key `threads` is the CPU's */
static void cuda_set_threads(int n) { (void)n; }
static int cuda_get_threads(void) { return 1; }

/* The fused attention's arithmetic at matmul precision highest and high: the fastest in base's
 * whole step on an H200 (bench/attention_steps.sh, bench/RESULTS.md) of those that pass the
 * CUDA suite: at highest the float cores with cp.async staging (of the float32-exact ones:
 * wide, pipelined, 3xtf32, mma-3xtf32), at high one TF32 product on the tensor cores with the
 * scores in registers (attention_mma.cu: "high" rounds the attention's products to TF32 as it
 * does the gemms'). float64 builds take the float cores for either (attention.cu).
 * TT_CUDA_ATTN in the environment overrides it, for comparing them in a whole step
 * (bench/attention_steps.sh) and for timing a pick before it is written here (gpu_check's
 * second call): NAME at both precisions, or HIGHEST/HIGH (e.g. 3xtf32/tf32), each of cuda.h's
 * six (wide, pipelined, 3xtf32, tf32, mma-3xtf32, mma-tf32); any other value is ignored,
 * whole, with a warning. */
static const tt_cuda_attn_math ATTN_MATH_HIGHEST = TT_CUDA_ATTN_PIPE;
static const tt_cuda_attn_math ATTN_MATH_HIGH = TT_CUDA_ATTN_MMA;

/* TT_CUDA_ATTN's names (the warning below lists them from here) */
static const struct {
    const char *name;
    tt_cuda_attn_math math;
} ATTN_NAMES[] = {{"wide", TT_CUDA_ATTN_WIDE},        {"pipelined", TT_CUDA_ATTN_PIPE},
                  {"3xtf32", TT_CUDA_ATTN_TF32X3},    {"tf32", TT_CUDA_ATTN_TF32},
                  {"mma-3xtf32", TT_CUDA_ATTN_MMA3}, {"mma-tf32", TT_CUDA_ATTN_MMA}};
enum { N_ATTN_NAMES = sizeof ATTN_NAMES / sizeof ATTN_NAMES[0] };

/* the arithmetic named by s[0 .. n), false where none is */
static bool attention_named(const char *s, size_t n, tt_cuda_attn_math *m)
{
    for (int k = 0; k < N_ATTN_NAMES; k++)
        if (strlen(ATTN_NAMES[k].name) == n && !strncmp(s, ATTN_NAMES[k].name, n)) {
            *m = ATTN_NAMES[k].math;
            return true;
        }
    return false;
}

static tt_cuda_attn_math attention_math(bool high)
{
    tt_cuda_attn_math m[2] = {ATTN_MATH_HIGHEST, ATTN_MATH_HIGH}, named[2];
    const char *e = getenv("TT_CUDA_ATTN");
    if (!e || !*e) return m[high];
    const char *slash = strchr(e, '/'), *second = slash ? slash + 1 : e; /* one name: both */
    if (attention_named(e, slash ? (size_t)(slash - e) : strlen(e), &named[0]) &&
        attention_named(second, strlen(second), &named[1]))
        return named[high];
    fprintf(stderr, "warning: TT_CUDA_ATTN=%s is not one of", e);
    for (int k = 0; k < N_ATTN_NAMES; k++) fprintf(stderr, " %s", ATTN_NAMES[k].name);
    fprintf(stderr, ", nor two of them as HIGHEST/HIGH (e.g. mma-3xtf32/mma-tf32); ignored\n");
    return m[high];
}

/* "high": cuBLAS may round float32 gemm inputs to TF32 on tensor cores (PyTorch's
 * torch.backends.cuda.matmul.allow_tf32); "highest": cuBLAS's default math, float32 inputs and
 * accumulation as PyTorch's "highest" has them (the pedantic mode would also be float32, but
 * rules out kernels PyTorch uses). cuBLAS gives the same bits on every run of one GPU model
 * either way. The fused attention takes attention_math's arithmetic (above: the float cores at
 * highest, TF32 tensor cores at high). float64 is unaffected. */
static void cuda_set_matmul_precision(bool high)
{
    ensure_init();
    gemm_tf32 = high;
    const cublasMath_t mode = high ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
    TT_CUBLAS_CHECK(cublasSetMathMode(blas, mode));
    if (blas_side) TT_CUBLAS_CHECK(cublasSetMathMode(blas_side, mode));
    tt_cuda_attention_set_math(attention_math(high));
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

/* .NAME = STEP(tt_cuda_NAME) for each kernel of tensor/kernels.h: every kernel may be captured
 * in a step's graph. In the order of tt_backend's fields, as C++ wants designated initialisers;
 * clang-format is off over the table, which it would fold onto one line around the list. */
#define CUDA_KERNEL(name, params, args) .name = STEP(tt_cuda_##name),

/* clang-format off */
extern "C" const tt_backend tt_cuda_backend = {
    .name = "cuda",
    .available = cuda_available,
    .mem_info = cuda_mem_info,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .zero = STEP(cuda_zero),
    .copy = STEP(cuda_copy),
    .to_host = cuda_to_host,
    .from_host = cuda_from_host,
    .fill = STEP(tt_cuda_fill),
    .set_threads = cuda_set_threads,
    .get_threads = cuda_get_threads,
    .set_matmul_precision = cuda_set_matmul_precision,
    TT_KERNELS(CUDA_KERNEL)
    .attention_scratch = tt_cuda_attention_scratch,
    .sum_squares = cuda_sum_squares,
    .step_setup = cuda_step_setup,
    .step_begin = cuda_step_begin,
    .step_end = cuda_step_end,
};
/* clang-format on */
