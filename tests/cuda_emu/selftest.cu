/* cuda_emu/selftest.cu: the emulator's own test (make CUDA_EMU=1 test-emu runs it first): that
 * what docs/gpu.md says it catches, it catches, so that the CUDA suite passing under it means
 * what it claims. Each case is a small kernel, right or wrong; a wrong one must end the process
 * with the emulator's message (run in a child), or give the poisoned value a missed barrier
 * reads, or touch a guard page. Written as CUDA, so it would compile under nvcc too; built
 * only by the emulator.
 * Exit 0 when every case holds, 1 otherwise, one line per case. */
#include "tensor/cuda/attention.cuh" /* cp.async: copy_async, copies_commit, copies_wait */

#include <cuda_runtime.h>
#include <mma.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

static void check(bool ok, const char *what)
{
    printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
    failures += !ok;
}

/* out[t] = the sum over the warp of t, by xor butterfly */
static __global__ void warp_sum_kernel(float *out)
{
    float x = (float)threadIdx.x;
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    out[threadIdx.x] = x;
}

/* out[t] = what thread t + 1 wrote to shared memory, with or without the barrier between */
static __global__ void neighbour_kernel(float *out, bool barrier)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float *s = (float *)smem;
    const int n = (int)blockDim.x, t = (int)threadIdx.x;
    s[t] = (float)t;
    if (barrier) __syncthreads();
    out[t] = s[(t + 1) % n];
}

/* thread 0 returns, the others wait at a barrier: undefined on a GPU */
static __global__ void early_return_kernel(void)
{
    if (threadIdx.x == 0) return;
    __syncthreads();
}

/* the first warp waits at one barrier, the second at another: undefined on a GPU */
static __global__ void split_barrier_kernel(float *out)
{
    if (threadIdx.x < 32) {
        out[threadIdx.x] = 1;
        __syncthreads();
    } else {
        out[threadIdx.x] = 2;
        __syncthreads();
        out[threadIdx.x] += 1;
    }
}

/* half the warp shuffles, the other half waits at __syncwarp */
static __global__ void divergent_kernel(float *out)
{
    float x = 1;
    if (threadIdx.x < 16) x = __shfl_xor_sync(0xffffffffu, x, 1);
    else __syncwarp();
    out[threadIdx.x] = x;
}

/* a wmma load from a pointer 4 bytes past a 256-bit boundary */
static __global__ void misaligned_wmma_kernel(const float *a)
{
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 8, nvcuda::wmma::precision::tf32,
                           nvcuda::wmma::row_major>
        f;
    nvcuda::wmma::load_matrix_sync(f, a + 1, 8);
}

/* half the warp loads a fragment: a wmma call is the whole warp's */
static __global__ void divergent_wmma_kernel(const float *a)
{
    nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 8, nvcuda::wmma::precision::tf32,
                           nvcuda::wmma::row_major>
        f;
    if (threadIdx.x < 16) nvcuda::wmma::load_matrix_sync(f, a, 8);
}

/* out (16 x 16) = a (16 x 8, every element x) b (8 x 16, every element 1), not rounded */
static __global__ void tf32_product_kernel(float *out, float x)
{
    namespace wm = nvcuda::wmma;
    wm::fragment<wm::matrix_a, 16, 16, 8, wm::precision::tf32, wm::row_major> a;
    wm::fragment<wm::matrix_b, 16, 16, 8, wm::precision::tf32, wm::row_major> b;
    wm::fragment<wm::accumulator, 16, 16, 8, float> c;
    wm::fill_fragment(a, x);
    wm::fill_fragment(b, 1.0f);
    wm::fill_fragment(c, 0.0f);
    wm::mma_sync(c, a, b, c);
    wm::store_matrix_sync(out, c, 16, wm::mem_row_major);
}

/* writes 64 floats past the end of p (n floats) or of the dynamic shared memory (n floats) */
static __global__ void overrun_kernel(float *p, int n, bool shared)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float *s = shared ? (float *)smem : p;
    s[n + 64 + (int)threadIdx.x] = 1;
}

/* counter[0] += 1 */
static __global__ void count_kernel(int *counter)
{
    if (threadIdx.x == 0) counter[0] += 1;
}

/* *p = v */
static __global__ void set_kernel(int *p, int v)
{
    if (threadIdx.x == 0) *p = v;
}

/* *dst = *src */
static __global__ void copy_kernel(int *dst, const int *src)
{
    if (threadIdx.x == 0) *dst = *src;
}

/* Per block of n threads: s[t] = t, a barrier, then thread t copies src[t] (zeros where
 * !have) over s[t] by cp.async and reads s[(t + 1) % n] into out[block n + t], before its wait
 * (the copy may not have landed: on a GPU a race with thread t + 1's copy) or after it and a
 * barrier (wait). */
static __global__ void copy_async_kernel(float *out, const float *src, bool have, bool wait)
{
    extern __shared__ __align__(16) unsigned char smem[];
    float *s = (float *)smem;
    const int n = (int)blockDim.x, t = (int)threadIdx.x;
    s[t] = (float)t;
    __syncthreads();
    copy_async(s + t, src + t, have);
    copies_commit();
    if (wait) {
        copies_wait<0>();
        __syncthreads();
    }
    out[(int)blockIdx.x * n + t] = s[(t + 1) % n];
    copies_wait<0>();
}

/* a cp.async copy never waited for */
static __global__ void copy_unwaited_kernel(const float *src)
{
    extern __shared__ __align__(16) unsigned char smem[];
    copy_async((float *)smem + threadIdx.x, src + threadIdx.x, true);
    copies_commit();
}

/* f in a child process: it must die by SIGABRT with `want` in what it wrote to stderr */
static void dies_with(void (*f)(void), const char *want, const char *what)
{
    int fd[2];
    if (pipe(fd)) return check(false, what);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        f();
        cudaStreamSynchronize(0);
        _exit(0);
    }
    close(fd[1]);
    char err[2048] = "";
    size_t len = 0;
    ssize_t r;
    while (len < sizeof err - 1 && (r = read(fd[0], err + len, sizeof err - 1 - len)) > 0)
        len += (size_t)r;
    err[len] = '\0';
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    bool ok = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && strstr(err, want);
    check(ok, what);
    if (!ok) fprintf(stderr, "  (child: %s)\n", err);
}

/* n elements of device memory, NaN bytes until written */
template <typename T = float> static T *device_array(int n)
{
    T *p = NULL;
    cudaMalloc(&p, (size_t)n * sizeof(T));
    return p;
}

/* The default schedule (TT_EMU_SCHEDULE=defer): queued work runs when the host waits for it,
 * so each wait the host leaves out shows. s is a non-blocking stream. */
static void check_deferred(cudaStream_t s)
{
    int *d = device_array<int>(1), *pinned, *pinned2, pageable = 0;
    cudaHostAlloc((void **)&pinned, sizeof(int), cudaHostAllocDefault);
    cudaHostAlloc((void **)&pinned2, sizeof(int), cudaHostAllocDefault);

    *pinned = 5;
    set_kernel<<<1, 32, 0, s>>>(d, 9);
    cudaMemcpyAsync(pinned, d, sizeof(int), cudaMemcpyDeviceToHost, s);
    check(*pinned == 5, "deferred: a copy into pinned memory has not run before a wait");
    cudaStreamSynchronize(s);
    check(*pinned == 9, "deferred: it has after cudaStreamSynchronize");

    set_kernel<<<1, 32, 0, s>>>(d, 7);
    cudaMemcpy(&pageable, d, sizeof(int), cudaMemcpyDeviceToHost);
    check(pageable == 9, "deferred: cudaMemcpy does not wait for a non-blocking stream");
    cudaMemcpyAsync(&pageable, d, sizeof(int), cudaMemcpyDeviceToHost, s);
    check(pageable == 7, "deferred: an async copy into pageable memory returns done");

    *pinned = 1;
    cudaMemcpyAsync(d, pinned, sizeof(int), cudaMemcpyHostToDevice, s);
    *pinned = 2; /* before the copy has run: it copies 2 */
    cudaMemcpyAsync(pinned2, d, sizeof(int), cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    check(*pinned2 == 2, "deferred: a host write to pinned memory before the copy runs counts");

    cudaEvent_t e;
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    *pinned = *pinned2 = 0;
    set_kernel<<<1, 32, 0, s>>>(d, 11);
    cudaMemcpyAsync(pinned, d, sizeof(int), cudaMemcpyDeviceToHost, s);
    cudaEventRecord(e, s);
    set_kernel<<<1, 32, 0, s>>>(d, 12);
    cudaMemcpyAsync(pinned2, d, sizeof(int), cudaMemcpyDeviceToHost, s);
    cudaEventSynchronize(e);
    check(*pinned == 11 && *pinned2 == 0,
          "deferred: cudaEventSynchronize runs the work before the record, not after");
    cudaStreamSynchronize(s);
    check(*pinned2 == 12, "deferred: the rest runs at the next wait");

    pageable = 4;
    cudaMemcpyAsync(d, &pageable, sizeof(int), cudaMemcpyHostToDevice, s);
    pageable = 5; /* pageable memory was read before the call returned */
    cudaMemcpyAsync(&pageable, d, sizeof(int), cudaMemcpyDeviceToHost, s);
    check(pageable == 4, "deferred: a copy from pageable memory takes the bytes at the call");
    cudaFreeHost(pinned);
    cudaFreeHost(pinned2);
    cudaFree(d);
}

/* A fork and a join between s and a second stream, as the backend makes them: x[0] = 5 on s,
 * then on the side stream x[1] = x[0] while s goes on, then on s x[2] = x[1]. join_first: s
 * waits for the side stream before its read (right), else after it (the read races). clobber:
 * s writes x[0] = 6 after the fork, while the side stream may still have to read it (a race
 * too). Returns x[1] and x[2] (x starts at 0). */
struct fork_join {
    cudaStream_t s, side;
    cudaEvent_t fork, join;
    int *x;

    void issue(bool join_first, bool clobber)
    {
        set_kernel<<<1, 32, 0, s>>>(x, 5);
        cudaEventRecord(fork, s);
        cudaStreamWaitEvent(side, fork, 0);
        copy_kernel<<<1, 32, 0, side>>>(x + 1, x);
        if (clobber) set_kernel<<<1, 32, 0, s>>>(x, 6);
        cudaEventRecord(join, side);
        if (join_first) cudaStreamWaitEvent(s, join, 0);
        copy_kernel<<<1, 32, 0, s>>>(x + 2, x + 1);
        if (!join_first) cudaStreamWaitEvent(s, join, 0);
    }

    void result(int *got)
    {
        cudaStreamSynchronize(s);
        cudaMemcpy(got, x + 1, 2 * sizeof(int), cudaMemcpyDeviceToHost);
        cudaMemsetAsync(x, 0, 3 * sizeof(int), s);
    }

    /* issued as they are (each call runs, or queues) */
    void run(bool join_first, bool clobber, int *got)
    {
        issue(join_first, clobber);
        result(got);
    }

    /* captured on s, then the graph launched once */
    cudaError_t replay(bool join_first, bool clobber, int *got)
    {
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
        issue(join_first, clobber);
        cudaError_t rc = cudaStreamEndCapture(s, &graph);
        if (rc) return rc;
        cudaGraphInstantiate(&exec, graph, 0);
        cudaGraphLaunch(exec, s);
        result(got);
        return cudaSuccess;
    }
};

static void check_streams(cudaStream_t s, bool deferred)
{
    fork_join f{s, NULL, NULL, NULL, device_array<int>(3)};
    cudaStreamCreateWithFlags(&f.side, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&f.fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&f.join, cudaEventDisableTiming);
    cudaMemsetAsync(f.x, 0, 3 * sizeof(int), s);
    int got[2] = {-1, -1};
    f.run(true, false, got);
    check(got[0] == 5 && got[1] == 5, "two streams: a fork and a join carry the value across");
    if (deferred) {
        f.run(false, false, got);
        check(got[1] == 0, "deferred: a read before the wait for the other stream sees the old "
                           "value");
    }
    check(f.replay(true, false, got) == cudaSuccess && got[0] == 5 && got[1] == 5,
          "a captured fork and join replay as issued");
    check(f.replay(false, false, got) == cudaSuccess && got[1] == 0,
          "a graph runs the forked stream late: a read without an edge from it sees the old "
          "value");
    check(f.replay(true, true, got) == cudaSuccess && got[0] == 6,
          "a graph runs the forked stream late: a write after the fork lands before its read");
    cudaGraph_t graph;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    cudaEventRecord(f.fork, s);
    cudaStreamWaitEvent(f.side, f.fork, 0);
    copy_kernel<<<1, 32, 0, f.side>>>(f.x + 1, f.x);
    check(cudaStreamEndCapture(s, &graph) == cudaErrorStreamCaptureUnjoined,
          "a capture whose fork is not joined fails to end");
    check(cudaEventSynchronize(f.fork) == cudaErrorCapturedEvent,
          "the host cannot wait on an event recorded in a capture");
    cudaFree(f.x);
}

int main(void)
{
    float *out = device_array(128), host[128];

    warp_sum_kernel<<<1, 64>>>(out);
    cudaMemcpy(host, out, 64 * sizeof(float), cudaMemcpyDeviceToHost);
    check(host[0] == 496 && host[31] == 496 && host[32] == 1520 && host[63] == 1520,
          "__shfl_xor_sync: each warp's lanes get their warp's sum");

    neighbour_kernel<<<1, 128, 128 * sizeof(float)>>>(out, true);
    cudaMemcpy(host, out, 128 * sizeof(float), cudaMemcpyDeviceToHost);
    bool right = true;
    for (int t = 0; t < 128; t++) right = right && host[t] == (float)((t + 1) % 128);
    check(right, "__syncthreads: a thread reads what its neighbour wrote before the barrier");

    /* block 0 runs its threads first to last: thread t reads t + 1's slot before it is written */
    neighbour_kernel<<<1, 128, 128 * sizeof(float)>>>(out, false);
    cudaMemcpy(host, out, 128 * sizeof(float), cudaMemcpyDeviceToHost);
    check(isnan(host[0]), "a missing __syncthreads: the read sees shared memory's NaN poison");

    dies_with([] { early_return_kernel<<<1, 64>>>(); },
              "__syncthreads reached by 63 threads after 1 returned",
              "a barrier after a thread returned is reported");
    dies_with([] { split_barrier_kernel<<<1, 64>>>(device_array(64)); },
              "wait at different __syncthreads", "threads at two different barriers are reported");
    dies_with([] { divergent_kernel<<<1, 32>>>(device_array(32)); },
              "wait at different warp operations",
              "lanes at different warp operations are reported");
    dies_with([] { misaligned_wmma_kernel<<<1, 32>>>(device_array(1024)); },
              "is not 256-bit aligned", "a misaligned wmma load is reported");
    dies_with([] { divergent_wmma_kernel<<<1, 32>>>(device_array(1024)); }, "deadlock",
              "a wmma load by half a warp is reported");
    float *product = device_array(256);
    tf32_product_kernel<<<1, 32>>>(product, 1.0f + 0x1p-20f);
    cudaMemcpy(host, product, 16 * sizeof(float), cudaMemcpyDeviceToHost);
    check(host[0] == 8.0f && host[15] == 8.0f,
          "a tensor core product ignores the low bits of an input not rounded to TF32");
    dies_with([] { overrun_kernel<<<1, 32>>>(device_array(256), 256, false); },
              "past a device buffer", "a write past a device buffer is reported");
    dies_with([] { overrun_kernel<<<1, 32, 256 * sizeof(float)>>>(device_array(256), 256, true); },
              "past a device buffer or the dynamic shared memory",
              "a write past the dynamic shared memory is reported");
    /* cp.async: block 0 holds each copy until the wait, block 1 makes it at once */
    float *src = device_array(64), *seen = device_array(128);
    for (int t = 0; t < 64; t++) host[t] = (float)(100 + t);
    cudaMemcpy(src, host, 64 * sizeof(float), cudaMemcpyHostToDevice);
    copy_async_kernel<<<2, 64, 64 * sizeof(float)>>>(seen, src, true, true);
    cudaMemcpy(host, seen, 128 * sizeof(float), cudaMemcpyDeviceToHost);
    check(host[0] == 101 && host[63] == 100 && host[64] == 101 && host[127] == 100,
          "cp.async: after the wait and a barrier every thread sees every copy");
    copy_async_kernel<<<2, 64, 64 * sizeof(float)>>>(seen, src, false, true);
    cudaMemcpy(host, seen, 128 * sizeof(float), cudaMemcpyDeviceToHost);
    check(host[0] == 0 && host[127] == 0, "cp.async: a copy without a source fills zeros");
    copy_async_kernel<<<2, 64, 64 * sizeof(float)>>>(seen, src, true, false);
    cudaMemcpy(host, seen, 128 * sizeof(float), cudaMemcpyDeviceToHost);
    check(host[0] == 1 && host[62] == 63, "cp.async: a read before the wait misses the copy");
    check(host[64] == 101 && host[64 + 62] == 163,
          "cp.async: odd blocks copy at once, over what other threads have yet to read");
    dies_with([] { copy_unwaited_kernel<<<1, 32, 32 * sizeof(float)>>>(device_array(32)); },
              "never waited for", "cp.async: a thread that returns before its wait is reported");
    const char *schedule = getenv("TT_EMU_SCHEDULE");
    const bool deferred = !schedule || strcmp(schedule, "eager");
    if (deferred)
        dies_with(
            [] {
                int *d = device_array<int>(1);
                set_kernel<<<1, 32>>>(d, 1);
                cudaStreamSynchronize(0);
                printf("%d\n", *d); /* the host reads device memory */
            },
            "the host touched", "deferred: the host reading device memory is reported");

    /* a capture records, refuses an allocation, and a graph replays what it recorded */
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (deferred) check_deferred(s);
    check_streams(s, deferred);
    int *counter = device_array<int>(1), got = -1;
    cudaMemsetAsync(counter, 0, sizeof(int), s);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    count_kernel<<<1, 32, 0, s>>>(counter);
    cudaMemcpy(&got, counter, sizeof got, cudaMemcpyDeviceToHost); /* refused: a host wait */
    check(got == -1, "a capture refuses a synchronous copy");
    cudaError_t end = cudaStreamEndCapture(s, &graph);
    check(end == cudaErrorStreamCaptureInvalidated, "a refused call invalidates the capture");
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    count_kernel<<<1, 32, 0, s>>>(counter);
    void *p = NULL;
    check(cudaMalloc(&p, 64) == cudaErrorStreamCaptureUnsupported && !p,
          "a capture refuses an allocation");
    cudaStreamEndCapture(s, &graph);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    count_kernel<<<1, 32, 0, s>>>(counter);
    check(cudaStreamEndCapture(s, &graph) == cudaSuccess, "a clean capture ends");
    cudaStreamSynchronize(s); /* cudaMemcpy would not wait for the non-blocking stream */
    cudaMemcpy(&got, counter, sizeof got, cudaMemcpyDeviceToHost);
    check(got == 0, "a captured launch does not run");
    cudaGraphInstantiate(&exec, graph, 0);
    for (int i = 0; i < 3; i++) cudaGraphLaunch(exec, s);
    cudaStreamSynchronize(s);
    cudaMemcpy(&got, counter, sizeof got, cudaMemcpyDeviceToHost);
    check(got == 3, "a graph launched 3 times runs its kernel 3 times");

    printf("cuda_emu selftest: %d failed\n", failures);
    return failures ? 1 : 0;
}
