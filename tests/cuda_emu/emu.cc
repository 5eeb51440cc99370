/* cuda_emu/emu.cc: the emulated CUDA runtime, cuBLAS and cuBLASLt (include/cuda_runtime.h says
 * what it is for and what it is not). A block's threads are fibers (a stack switch on x86-64,
 * ucontext elsewhere) run in index order, each until it reaches a barrier or a warp operation: when
 * every live thread of the block waits at __syncthreads, or every lane of a warp at the same
 * warp operation, they go on. A thread that returns while others wait at a barrier, lanes that
 * wait at different operations, a partial mask: each is reported as the bug it would be on a
 * GPU. The first block of a launch that makes no such call lets the launch's other blocks run
 * their threads as plain calls, which keeps element-wise kernels fast; such a block calling
 * one is reported too. Odd blocks run their threads in reverse order, so that a missing
 * barrier shows whichever warp writes, and every other launch its blocks. Streams queue their
 * work until the host waits for it (or run it at once: TT_EMU_SCHEDULE, "the schedule" below). */
#include "cublasLt.h"
#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "mma.h"

#include <cblas.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <vector>

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

struct emu_stream {
    bool nonblocking; /* cudaStreamNonBlocking: no implicit wait on the legacy stream */
};
struct emu_event {
    cudaStream_t stream; /* where it was last recorded, and after which queued op */
    unsigned long seq;
    bool recorded;
    bool captured;         /* last recorded in a capture: then what it stands for is */
    std::vector<int> after; /* the captured nodes a wait on it follows */
};
/* A captured node: its stream and the nodes it must follow (stream order and event waits). */
struct emu_node {
    cudaStream_t stream;
    std::function<void()> op;
    std::vector<int> after;
};
struct emu_graph {
    cudaStream_t origin; /* the capture's own stream */
    std::vector<emu_node> nodes;
    std::vector<int> order; /* how a launch runs them (instantiated graphs) */
};

namespace emu {

void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "cuda_emu: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (block %u,%u,%u thread %u,%u,%u)\n", blockIdx.x, blockIdx.y, blockIdx.z,
            threadIdx.x, threadIdx.y, threadIdx.z);
    va_end(ap);
    fflush(stderr);
    abort();
}

/* ---- fibers ----------------------------------------------------------------------------------
 * On x86-64 a switch saves the callee-saved registers on the fiber's stack and swaps stack
 * pointers (no system call: glibc's swapcontext also sets the signal mask, which made the
 * emulator spend most of its time in the kernel); elsewhere ucontext does it. */

#if defined(__x86_64__)
extern "C" void emu_switch(void **save_sp, void *next_sp);
__asm__(".text\n"
        ".globl emu_switch\n"
        ".type emu_switch,@function\n"
        "emu_switch:\n"
        "    pushq %rbp\n    pushq %rbx\n    pushq %r12\n    pushq %r13\n"
        "    pushq %r14\n    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n    popq %r14\n    popq %r13\n    popq %r12\n"
        "    popq %rbx\n    popq %rbp\n"
        "    ret\n"
        ".size emu_switch,.-emu_switch\n");
#endif

enum fstate { READY, WAIT_BLOCK, WAIT_WARP, DONE };
enum { OP_SYNCWARP = BALLOT + 1, OP_MMA };

struct fiber {
#if defined(__x86_64__)
    void *sp;
#else
    ucontext_t ctx;
#endif
    std::unique_ptr<char[]> stack;
    fstate state;
    const char *file; /* the __syncthreads it waits at */
    int line;
    int op, arg;
    uint64_t in, out;
};

static const size_t STACK = 256 << 10;
static std::vector<fiber> fibers;
#if defined(__x86_64__)
static void *scheduler;
#else
static ucontext_t scheduler;
#endif
static int cur;         /* the running fiber */
static bool direct;     /* threads run as plain calls: no barrier may be reached */
static long sync_calls; /* barriers and warp operations in the block under way */
static const std::function<void()> *body_now;

static void set_thread(int t)
{
    threadIdx.x = (unsigned)t % blockDim.x;
    threadIdx.y = (unsigned)t / blockDim.x % blockDim.y;
    threadIdx.z = (unsigned)t / (blockDim.x * blockDim.y);
}

/* from the running fiber back to the scheduler */
static void to_scheduler(void)
{
#if defined(__x86_64__)
    emu_switch(&fibers[cur].sp, scheduler);
#else
    swapcontext(&fibers[cur].ctx, &scheduler);
#endif
}

/* ---- cp.async (include/cuda_runtime.h): each thread's copies, by commit group ------------- */

struct async_copy {
    void *dst;
    const void *src;
    size_t n, have;
};
struct copy_queue {
    std::vector<async_copy> open;               /* since the last commit */
    std::deque<std::vector<async_copy>> groups; /* committed, oldest first */
};
static std::vector<copy_queue> copy_queues; /* by the block's linear thread index */

static int linear_thread(void)
{
    return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}

static copy_queue &my_copies(void)
{
    const size_t t = (size_t)linear_thread();
    if (copy_queues.size() <= t) copy_queues.resize(t + 1);
    return copy_queues[t];
}

static void land(const async_copy &c)
{
    memcpy(c.dst, c.src, c.have);
    memset((char *)c.dst + c.have, 0, c.n - c.have);
}

/* a thread's body returned: no copy may be left (groups may, if empty: a commit with nothing
 * issued since the last) */
static void copies_finished(void)
{
    copy_queue &q = my_copies();
    bool left = !q.open.empty();
    for (const std::vector<async_copy> &g : q.groups) left |= !g.empty();
    if (left) fail("a thread returned with cp.async copies it never waited for");
    q.groups.clear();
}

static void fiber_main(void)
{
    (*body_now)();
    copies_finished();
    fibers[cur].state = DONE;
#if defined(__x86_64__)
    to_scheduler(); /* never resumed */
    abort();
#endif /* ucontext: uc_link returns to the scheduler */
}

/* fiber t, ready to start fiber_main */
static void fiber_start(fiber &f)
{
    if (!f.stack) f.stack.reset(new char[STACK]);
#if defined(__x86_64__)
    /* emu_switch's frame: 6 saved registers, then fiber_main as the return address, at a
     * 16-byte boundary so that fiber_main starts as if called */
    uintptr_t top = ((uintptr_t)f.stack.get() + STACK) & ~(uintptr_t)15;
    void **sp = (void **)(top - 16);
    sp[0] = (void *)fiber_main;
    for (int r = 1; r <= 6; r++) sp[-r] = NULL;
    f.sp = sp - 6;
#else
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.get();
    f.ctx.uc_stack.ss_size = STACK;
    f.ctx.uc_link = &scheduler;
    makecontext(&f.ctx, fiber_main, 0);
#endif
    f.state = READY;
}

static void to_fiber(int t)
{
    cur = t;
    set_thread(t);
#if defined(__x86_64__)
    emu_switch(&scheduler, fibers[t].sp);
#else
    swapcontext(&scheduler, &fibers[t].ctx);
#endif
}

static void wait_here(fstate why)
{
    if (direct)
        fail("a barrier or warp operation in a block whose launch's first block made none "
             "(the emulator ran it as plain calls)");
    sync_calls++;
    fibers[cur].state = why;
    to_scheduler();
}

/* an mma.sync's operands, where one lane holds them (its fiber's stack, waiting) */
struct mma_operands {
    float *c;
    const uint32_t *a, *b;
};

/* an operand's bits as the tensor core reads them (mma.h's tf32_read, as wmma's products do) */
static float tf32_bits(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return nvcuda::wmma::tf32_read(f);
}

/* the warp from fiber lo at an m16n8k8 mma (include/mma.h): every lane's C += A B */
static void resolve_mma(int lo)
{
    float A[16][8], B[8][8], C[16][8];
    for (int l = 0; l < 32; l++) {
        const mma_operands *m = (const mma_operands *)(uintptr_t)fibers[lo + l].in;
        const int g = l / 4, t = l % 4;
        for (int e = 0; e < 4; e++) {
            A[g + 8 * (e & 1)][t + 4 * (e >> 1)] = tf32_bits(m->a[e]);
            C[g + 8 * (e >> 1)][2 * t + (e & 1)] = m->c[e];
        }
        for (int e = 0; e < 2; e++) B[t + 4 * e][g] = tf32_bits(m->b[e]);
    }
    for (int l = 0; l < 32; l++) {
        const mma_operands *m = (const mma_operands *)(uintptr_t)fibers[lo + l].in;
        const int g = l / 4, t = l % 4;
        for (int e = 0; e < 4; e++) {
            const int r = g + 8 * (e >> 1), n = 2 * t + (e & 1);
            float acc = C[r][n];
            for (int k = 0; k < 8; k++) acc += A[r][k] * B[k][n];
            m->c[e] = acc;
        }
    }
}

/* every lane of warp w waits at one operation: compute each lane's result, release them */
static void resolve_warp(int lo, int hi)
{
    const fiber &f0 = fibers[lo];
    for (int l = lo; l < hi; l++)
        if (fibers[l].op != f0.op)
            fail("lanes %d and %d of a warp wait at different warp operations (%d, %d)", lo, l,
                 f0.op, fibers[l].op);
    if (f0.op == OP_MMA) {
        resolve_mma(lo);
        for (int l = lo; l < hi; l++) fibers[l].state = READY;
        return;
    }
    uint64_t ballot = 0;
    for (int l = lo; l < hi; l++) ballot |= (uint64_t)(fibers[l].in != 0) << (l - lo);
    for (int l = lo; l < hi; l++) {
        fiber &f = fibers[l];
        const int lane = l - lo;
        if (f.op == SHFL_XOR) f.out = fibers[lo + ((lane ^ f.arg) & 31)].in;
        else if (f.op == SHFL_IDX) f.out = fibers[lo + (f.arg & 31)].in;
        else if (f.op == BALLOT) f.out = ballot;
        f.state = READY;
    }
}

static void run_block_fibers(int n, const std::function<void()> &body)
{
    if ((int)fibers.size() < n) fibers.resize((size_t)n);
    for (int t = 0; t < n; t++) fiber_start(fibers[t]);
    body_now = &body;
    /* odd blocks run their threads last to first: a read that misses a barrier then sees
     * another warp's unwritten NaN whichever side of it the writer is */
    const bool reverse = (blockIdx.x + blockIdx.y + blockIdx.z) & 1;
    for (;;) {
        for (int i = 0; i < n; i++) {
            const int t = reverse ? n - 1 - i : i;
            if (fibers[t].state == READY) to_fiber(t);
        }
        int done = 0, at_barrier = 0;
        for (int t = 0; t < n; t++) {
            done += fibers[t].state == DONE;
            at_barrier += fibers[t].state == WAIT_BLOCK;
        }
        if (done == n) return;
        bool moved = false;
        for (int lo = 0; lo < n; lo += 32) {
            const int hi = lo + 32 < n ? lo + 32 : n;
            int waiting = 0;
            for (int l = lo; l < hi; l++) waiting += fibers[l].state == WAIT_WARP;
            if (!waiting) continue;
            if (hi - lo < 32) fail("a warp operation in a warp of %d threads", hi - lo);
            if (waiting == 32) {
                resolve_warp(lo, hi);
                moved = true;
            }
        }
        if (moved) continue;
        if (at_barrier && at_barrier + done == n) {
            if (done)
                fail("__syncthreads reached by %d threads after %d returned", at_barrier, done);
            for (int t = 1; t < n; t++) {
                const fiber &a = fibers[0], &b = fibers[t];
                if (a.line != b.line || (a.file != b.file && strcmp(a.file, b.file)))
                    fail("threads 0 and %d wait at different __syncthreads (%s:%d, %s:%d): a "
                         "barrier in code the block does not run uniformly", t, a.file, a.line,
                         b.file, b.line);
            }
            for (int t = 0; t < n; t++) fibers[t].state = READY;
            continue;
        }
        fail("deadlock: %d threads at __syncthreads, %d returned, the rest at warp operations "
             "some of their lanes never reach", at_barrier, done);
    }
}

/* ---- launches, memory, streams and graphs --------------------------------------------------- */

static std::map<const void *, int> smem_allowed; /* cudaFuncSetAttribute */
static const int SMEM_DEFAULT = 48 * 1024, SMEM_OPTIN = 227 * 1024;
/* ---- guard pages: every device buffer and the dynamic shared memory end at a page that no
 * access may touch, so a kernel reading or writing past one stops at once (compute-sanitizer's
 * memcheck, for overruns of more than the 256-byte rounding of an allocation) ----------------- */

static size_t page(void)
{
    static size_t p;
    if (!p) p = (size_t)sysconf(_SC_PAGESIZE);
    return p;
}

struct guarded {
    char *base; /* the mapping: the pages of the buffer, then the guard page */
    size_t len;
    size_t data(void) const { return len - page(); } /* the buffer's pages */
};

/* n bytes (a multiple of 256) whose end touches a PROT_NONE page; NULL if mmap fails */
static void *guarded_alloc(size_t n, guarded *g)
{
    const size_t data = (n + page() - 1) / page() * page();
    g->len = data + page();
    g->base = (char *)mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                           -1, 0);
    if (g->base == MAP_FAILED) return NULL;
    mprotect(g->base + g->data(), page(), PROT_NONE);
    return g->base + data - n;
}

/* > 0 while the emulated GPU works: a kernel, a copy, a gemm. volatile, as what the SIGSEGV
 * handler shares: else the compiler may move its updates across a memcpy it knows cannot see it */
static volatile sig_atomic_t device_open;
static bool open_on_fault(const char *a);

static void on_segv(int sig, siginfo_t *info, void *ctx)
{
    (void)sig, (void)ctx;
    if (open_on_fault((const char *)info->si_addr)) return; /* the access is made again */
    char msg[320];
    int len = device_open
                  ? snprintf(msg, sizeof msg, "cuda_emu: access to %p, past a device buffer or "
                             "the dynamic shared memory (a guard page), or another bad address "
                             "(block %u,%u,%u thread %u,%u,%u)\n", info->si_addr, blockIdx.x,
                             blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z)
                  : snprintf(msg, sizeof msg, "cuda_emu: the host touched %p, device memory "
                             "(or another bad address), outside a kernel or copy: on a GPU the "
                             "host cannot dereference a cudaMalloc pointer\n", info->si_addr);
    if (write(2, msg, (size_t)len) < 0) abort();
    abort();
}

static void catch_overruns(void)
{
    static bool done;
    if (done) return;
    done = true;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
}

static unsigned char *smem; /* the launch's dynamic shared memory: it ends at smem_guard */
static unsigned char *smem_guard;
static cudaError_t last_error, capture_error;
static bool capturing;
static cudaStream_t capture_stream;
static std::vector<emu_node> recording;
/* the streams in the capture (its own, and those that waited on an event recorded in it): the
 * nodes their next node follows */
static std::map<cudaStream_t, std::vector<int>> capture_tail;
static std::map<uintptr_t, size_t> pinned; /* cudaHostAlloc'd ranges: start -> bytes */
static std::map<void *, guarded> device; /* cudaMalloc'd blocks: their mappings */
static size_t device_used;
static const size_t DEVICE_BYTES = (size_t)16 << 30; /* the emulated GPU's memory */

unsigned char *dynamic_smem(void) { return smem; }

static void exec_grid(const cfg &c, const std::function<void()> &body)
{
    gridDim = c.grid;
    blockDim = c.block;
    if (!smem_guard) { /* the largest a block may have, once */
        guarded g;
        smem_guard = (unsigned char *)guarded_alloc((size_t)SMEM_OPTIN, &g) + SMEM_OPTIN;
        catch_overruns();
    }
    smem = smem_guard - (c.smem + 127) / 128 * 128;
    const int n = (int)(c.block.x * c.block.y * c.block.z);
    /* every other launch runs its blocks last to first: a kernel that needs another block's
     * results (blocks of one launch have no order on a GPU) then reads NaN one way or other */
    static unsigned long launches;
    const bool backwards = launches++ & 1;
    bool plain = false;
    for (unsigned zi = 0; zi < c.grid.z; zi++)
        for (unsigned yi = 0; yi < c.grid.y; yi++)
            for (unsigned xi = 0; xi < c.grid.x; xi++) {
                const unsigned z = backwards ? c.grid.z - 1 - zi : zi;
                const unsigned y = backwards ? c.grid.y - 1 - yi : yi;
                const unsigned x = backwards ? c.grid.x - 1 - xi : xi;
                blockIdx = uint3{x, y, z};
                if (c.smem) memset(smem, 0xff, c.smem); /* NaN until written */
                if (!plain) {
                    sync_calls = 0;
                    run_block_fibers(n, body);
                    plain = sync_calls == 0;
                    continue;
                }
                direct = true;
                for (int t = 0; t < n; t++) {
                    set_thread(t);
                    body();
                    copies_finished();
                }
                direct = false;
            }
}

/* ---- the schedule ----------------------------------------------------------------------------
 * By default (TT_EMU_SCHEDULE=defer) what a stream is given runs only when the host waits for
 * it: a stream or event synchronisation, a blocking copy, cudaFree, cudaFreeHost. That is a
 * GPU that has not started yet: a host read that does not wait sees the bytes from before, a
 * host write to pinned memory before the copy that reads it has run changes what it copies,
 * and a wait on one stream leaves another's work queued. Outside that work device memory is
 * PROT_NONE, so a host access to a cudaMalloc pointer stops the run as it would on a GPU.
 * TT_EMU_SCHEDULE=eager runs each call at once instead (a GPU done before the call returns),
 * device memory always readable. A missing or misplaced wait shows in one or the other.
 * The legacy default stream and blocking streams are one queue (they wait for each other); a
 * non-blocking stream is its own, and its work runs before another queue's only where that one
 * waits on its event (cudaStreamWaitEvent). */

struct pending {
    cudaStream_t queue; /* NULL: the legacy stream's and the blocking streams' */
    unsigned long seq;
    std::function<void()> op;
};
static std::list<pending> queued;
static unsigned long queued_seq; /* the last queued op's */

static bool deferring(void)
{
    static int mode = -1;
    if (mode < 0) {
        const char *e = getenv("TT_EMU_SCHEDULE");
        if (e && strcmp(e, "eager") && strcmp(e, "defer")) {
            fprintf(stderr, "cuda_emu: TT_EMU_SCHEDULE=%s: expected defer (the default) or "
                    "eager\n", e);
            exit(2);
        }
        mode = !(e && !strcmp(e, "eager"));
    }
    return mode;
}

static cudaStream_t queue_of(cudaStream_t s) { return s && s->nonblocking ? s : NULL; }

/* Device memory is PROT_NONE outside the device's work (defer only). While it works (open,
 * nested), the first access to a buffer faults and opens that buffer (its pages, not the guard
 * page) until the work ends: this costs a system call per buffer touched, not per buffer held. */
static const guarded *volatile opened[1024];
static volatile sig_atomic_t n_opened, opened_all;

static void set_access(const guarded &g, int prot) { mprotect(g.base, g.data(), prot); }

static bool open_on_fault(const char *a)
{
    if (!device_open || !deferring()) return false;
    auto it = device.upper_bound((void *)a);
    if (it == device.begin()) return false;
    --it;
    const guarded &g = it->second;
    if (a < (const char *)it->first || a >= g.base + g.data()) return false; /* not in it */
    set_access(g, PROT_READ | PROT_WRITE);
    if (n_opened < (int)(sizeof opened / sizeof *opened)) {
        opened[n_opened] = &g;
        n_opened = n_opened + 1;
    } else {
        opened_all = 1;
    }
    return true;
}

static void open_device(bool open)
{
    device_open = device_open + (open ? 1 : -1);
    if (open ? device_open > 1 : device_open > 0) return;
    if (open || !deferring()) return;
    if (opened_all)
        for (auto &d : device) set_access(d.second, PROT_NONE);
    else
        for (int i = 0; i < n_opened; i++) set_access(*opened[i], PROT_NONE);
    n_opened = 0;
    opened_all = 0;
}

/* runs the queued ops up to seq, of s's queue or of every queue, in the order given. An op
 * queues nothing (kernels, copies and gemms make no runtime calls), but a stream's wait on
 * another's event drains that one (nested): so each op is looked for from the start. */
static void drain(cudaStream_t s, bool every, unsigned long seq)
{
    open_device(true);
    for (;;) {
        auto it = queued.begin();
        while (it != queued.end() && it->seq <= seq && !every && it->queue != queue_of(s)) ++it;
        if (it == queued.end() || it->seq > seq) break;
        std::function<void()> op = std::move(it->op);
        queued.erase(it);
        op();
    }
    open_device(false);
}

static void drain_all(void) { drain(NULL, true, queued_seq); }

/* what a stream does: queued, now, or into the capture */
static cudaError_t enqueue(cudaStream_t s, std::function<void()> op)
{
    if (capturing) {
        auto tail = capture_tail.find(s);
        if (tail == capture_tail.end()) { /* a stream outside the capture */
            capture_error = cudaErrorStreamCaptureInvalidated;
            return cudaErrorStreamCaptureUnsupported;
        }
        recording.push_back(emu_node{s, std::move(op), tail->second});
        tail->second = {(int)recording.size() - 1};
        return cudaSuccess;
    }
    if (deferring()) {
        queued.push_back(pending{queue_of(s), ++queued_seq, std::move(op)});
        return cudaSuccess;
    }
    open_device(true);
    op();
    open_device(false);
    return cudaSuccess;
}

void run(const cfg &c, const void *kernel, std::function<void()> body)
{
    const unsigned long threads = (unsigned long)c.block.x * c.block.y * c.block.z;
    if (!threads || threads > 1024 || c.block.z > 64 || !c.grid.x || !c.grid.y || !c.grid.z ||
        c.grid.x > 2147483647u || c.grid.y > 65535 || c.grid.z > 65535) {
        last_error = cudaErrorInvalidConfiguration;
        return;
    }
    auto allowed = smem_allowed.find(kernel);
    size_t limit = allowed == smem_allowed.end() ? SMEM_DEFAULT : (size_t)allowed->second;
    if (c.smem > limit) {
        last_error = cudaErrorInvalidValue;
        return;
    }
    cudaError_t rc = enqueue(c.stream, [c, body]() { exec_grid(c, body); });
    if (rc) last_error = rc;
}

uint64_t warp_exchange(unsigned mask, warp_op op, uint64_t bits, int arg)
{
    if (mask != 0xffffffffu) fail("warp operation with mask %#x: only full masks emulated", mask);
    fibers[cur].op = op;
    fibers[cur].in = bits;
    fibers[cur].arg = arg;
    wait_here(WAIT_WARP);
    return fibers[cur].out;
}

static bool is_pinned(const void *p, size_t bytes)
{
    auto it = pinned.upper_bound((uintptr_t)p);
    if (it == pinned.begin()) return false;
    --it;
    return (uintptr_t)p + bytes <= it->first + it->second;
}

static cudaError_t refuse_in_capture(void)
{
    if (!capturing) return cudaSuccess;
    capture_error = cudaErrorStreamCaptureInvalidated;
    return cudaErrorStreamCaptureUnsupported;
}

} // namespace emu

using namespace emu;

void emu::syncthreads_at(const char *file, int line)
{
    fibers[cur].file = file;
    fibers[cur].line = line;
    wait_here(WAIT_BLOCK);
}

void __syncwarp(unsigned mask) { warp_exchange(mask, (warp_op)OP_SYNCWARP, 0, 0); }

void emu::mma_m16n8k8_tf32(float c[4], const uint32_t a[4], const uint32_t b[2])
{
    mma_operands m = {c, a, b};
    warp_exchange(0xffffffffu, (warp_op)OP_MMA, (uint64_t)(uintptr_t)&m, 0);
}

void emu::copy_async(void *dst, const void *src, size_t n, size_t have)
{
    if ((n != 4 && n != 8 && n != 16) || have > n)
        fail("cp.async of %zu bytes, %zu of them from the source", n, have);
    if ((uintptr_t)dst % n || (uintptr_t)src % n)
        fail("cp.async of %zu bytes from %p to %p: both must be %zu-byte aligned", n, src, dst, n);
    /* the source must be a readable address even where nothing is copied from it (have 0):
     * the kernels point such copies inside their buffers, and a guard page past a buffer
     * shows one that does not */
    if (have == 0) (void)*(const volatile char *)src;
    const async_copy c = {dst, src, n, have};
    if ((blockIdx.x + blockIdx.y + blockIdx.z) & 1) land(c); /* odd blocks: at once */
    else my_copies().open.push_back(c);
}

void emu::copy_commit(void)
{
    copy_queue &q = my_copies();
    q.groups.push_back(std::move(q.open));
    q.open.clear();
}

void emu::copy_wait(int k)
{
    copy_queue &q = my_copies();
    while ((int)q.groups.size() > k) {
        for (const async_copy &c : q.groups.front()) land(c);
        q.groups.pop_front();
    }
}

cudaError_t cudaGetDeviceCount(int *n)
{
    *n = 1;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *dev)
{
    *dev = 0;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev) { return dev == 0 ? cudaSuccess : cudaErrorInvalidValue; }

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int dev)
{
    (void)dev;
    if (attr != cudaDevAttrMaxSharedMemoryPerBlockOptin) return cudaErrorInvalidValue;
    *value = SMEM_OPTIN;
    return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, const void *kernel,
                                                          int threads, size_t smem)
{
    (void)kernel, (void)threads, (void)smem;
    *blocks = 0;
    return cudaErrorNotSupported;
}

cudaError_t cudaFuncSetAttribute(const void *kernel, cudaFuncAttribute attr, int value)
{
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0 || value > SMEM_OPTIN)
        return cudaErrorInvalidValue;
    smem_allowed[kernel] = value;
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    *total_bytes = DEVICE_BYTES;
    *free_bytes = DEVICE_BYTES - device_used;
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    if (cudaError_t rc = refuse_in_capture()) return rc;
    size_t n = (bytes + 255) / 256 * 256;
    if (!n) n = 256;
    guarded g;
    *p = n <= DEVICE_BYTES - device_used ? guarded_alloc(n, &g) : NULL;
    if (!*p) return cudaErrorMemoryAllocation;
    catch_overruns();
    memset(*p, 0xff, n); /* NaN until written */
    if (deferring()) set_access(g, PROT_NONE); /* opened by its first access, if working */
    device[*p] = g;
    device_used += g.len;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    if (cudaError_t rc = refuse_in_capture()) return rc;
    if (!p) return cudaSuccess;
    auto it = device.find(p);
    if (it == device.end()) return cudaErrorInvalidValue; /* not from cudaMalloc */
    drain_all(); /* cudaFree waits for the device */
    device_used -= it->second.len;
    munmap(it->second.base, it->second.len);
    device.erase(it);
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags)
{
    (void)flags;
    if (cudaError_t rc = refuse_in_capture()) return rc;
    size_t n = (bytes + 63) / 64 * 64;
    *p = aligned_alloc(64, n ? n : 64);
    if (!*p) return cudaErrorMemoryAllocation;
    pinned[(uintptr_t)*p] = bytes;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p)
{
    if (cudaError_t rc = refuse_in_capture()) return rc;
    drain_all(); /* as cudaFree */
    pinned.erase((uintptr_t)p);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    (void)kind;
    if (cudaError_t rc = refuse_in_capture()) return rc;
    /* on the legacy stream: after its queue's work, not a non-blocking stream's */
    drain(NULL, false, queued_seq);
    open_device(true);
    memmove(dst, src, bytes);
    open_device(false);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    /* a capture holds copies between pinned host memory and the device, not pageable ones */
    if (capturing && ((kind == cudaMemcpyHostToDevice && !is_pinned(src, bytes)) ||
                      (kind == cudaMemcpyDeviceToHost && !is_pinned(dst, bytes))))
        return refuse_in_capture();
    if (kind == cudaMemcpyHostToDevice && !is_pinned(src, bytes)) {
        /* pageable memory is read into a staging buffer before the call returns */
        auto staged = std::make_shared<std::vector<char>>((const char *)src,
                                                          (const char *)src + bytes);
        return enqueue(stream, [dst, staged]() { memcpy(dst, staged->data(), staged->size()); });
    }
    cudaError_t rc = enqueue(stream, [dst, src, bytes]() { memmove(dst, src, bytes); });
    /* a copy into pageable memory returns once it is done */
    if (!rc && !capturing && kind == cudaMemcpyDeviceToHost && !is_pinned(dst, bytes))
        drain(stream, false, queued_seq);
    return rc;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t stream)
{
    return enqueue(stream, [p, value, bytes]() { memset(p, value, bytes); });
}

/* `height` rows of `width` bytes, `pitch` bytes apart (the runtime refuses width > pitch) */
cudaError_t cudaMemset2DAsync(void *p, size_t pitch, int value, size_t width, size_t height,
                              cudaStream_t stream)
{
    if (width > pitch) return cudaErrorInvalidValue;
    return enqueue(stream, [p, pitch, value, width, height]() {
        for (size_t r = 0; r < height; r++) memset((char *)p + r * pitch, value, width);
    });
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags)
{
    *stream = new emu_stream{(flags & cudaStreamNonBlocking) != 0};
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    if (cudaError_t rc = refuse_in_capture()) return rc;
    drain(stream, false, queued_seq);
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags)
{
    (void)flags;
    *event = new emu_event{};
    return cudaSuccess;
}

/* In a capture, on a stream in it: the event stands for the stream's nodes so far (a wait on
 * it is an edge of the graph). Otherwise for the work queued on the stream so far. */
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    if (capturing) {
        auto tail = capture_tail.find(stream);
        if (tail == capture_tail.end()) return refuse_in_capture();
        *event = emu_event{stream, 0, true, true, tail->second};
        return cudaSuccess;
    }
    *event = emu_event{stream, queued_seq, true, false, {}};
    return cudaSuccess;
}

/* waits for the work queued on the event's stream before its record, not for what came after */
cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    if (cudaError_t rc = refuse_in_capture()) return rc;
    if (event->captured) return cudaErrorCapturedEvent;
    if (event->recorded) drain(event->stream, false, event->seq);
    return cudaSuccess;
}

/* The stream's later work follows the event's. In a capture: the event must be the capture's,
 * and a stream outside it joins it (a fork); its next node follows the event's nodes. Outside
 * one, deferred: an op on the stream that runs the event's stream up to the record, so work a
 * stream does not wait for runs after the work that should have. */
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags)
{
    if (flags) return cudaErrorInvalidValue;
    if (!event->recorded) return cudaSuccess; /* nothing to wait for, as on a GPU */
    if (capturing) {
        if (!event->captured) {
            capture_error = cudaErrorStreamCaptureInvalidated;
            return cudaErrorStreamCaptureIsolation;
        }
        std::vector<int> &tail = capture_tail[stream];
        for (int n : event->after)
            if (std::find(tail.begin(), tail.end(), n) == tail.end()) tail.push_back(n);
        return cudaSuccess;
    }
    if (event->captured) return cudaErrorCapturedEvent;
    if (!deferring() || queue_of(stream) == queue_of(event->stream)) return cudaSuccess;
    const cudaStream_t from = event->stream;
    const unsigned long seq = event->seq;
    return enqueue(stream, [from, seq]() { drain(from, false, seq); });
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode)
{
    if (capturing || mode != cudaStreamCaptureModeGlobal) return cudaErrorInvalidValue;
    capturing = true;
    capture_stream = stream;
    capture_error = cudaSuccess;
    recording.clear();
    capture_tail = {{stream, {}}};
    return cudaSuccess;
}

/* Every node must lead to the capture's own stream's last ones: a stream that forked from it
 * and was not joined back is an error, as on a GPU. */
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
    if (!capturing || stream != capture_stream) return cudaErrorInvalidValue;
    capturing = false;
    *graph = NULL;
    std::vector<emu_node> nodes = std::move(recording);
    std::vector<int> todo = capture_tail[stream];
    recording.clear();
    capture_tail.clear();
    if (capture_error) return capture_error;
    std::vector<char> joined(nodes.size());
    while (!todo.empty()) {
        const int n = todo.back();
        todo.pop_back();
        if (joined[n]) continue;
        joined[n] = 1;
        todo.insert(todo.end(), nodes[n].after.begin(), nodes[n].after.end());
    }
    if (std::find(joined.begin(), joined.end(), 0) != joined.end())
        return cudaErrorStreamCaptureUnjoined;
    *graph = new emu_graph{stream, std::move(nodes), {}};
    return cudaSuccess;
}

/* The order a launch runs the nodes in: the capture's own stream's first whenever one is
 * ready, the other streams' as late as their edges allow. A node that reads another stream's
 * result without an edge from it then reads the value from before, and one that overwrites
 * what another stream still has to read runs first: a GPU may do either. */
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags)
{
    (void)flags;
    if (!graph) return cudaErrorInvalidValue;
    emu_graph *g = new emu_graph(*graph);
    const size_t n = g->nodes.size();
    std::vector<char> done(n);
    auto ready = [&](size_t i) {
        for (int a : g->nodes[i].after)
            if (!done[a]) return false;
        return !done[i];
    };
    while (g->order.size() < n) {
        size_t pick = n;
        for (size_t i = 0; i < n; i++) {
            if (!ready(i)) continue;
            if (g->nodes[i].stream == g->origin) {
                pick = i;
                break;
            }
            if (pick == n) pick = i;
        }
        done[pick] = 1;
        g->order.push_back((int)pick);
    }
    *exec = g;
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
    if (capturing) return cudaErrorStreamCaptureUnsupported;
    for (int n : exec->order) enqueue(stream, exec->nodes[n].op);
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    delete graph;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    delete exec;
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t rc = last_error;
    last_error = cudaSuccess;
    return rc;
}

const char *cudaGetErrorName(cudaError_t rc)
{
    switch (rc) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureUnjoined: return "cudaErrorStreamCaptureUnjoined";
    case cudaErrorStreamCaptureIsolation: return "cudaErrorStreamCaptureIsolation";
    case cudaErrorCapturedEvent: return "cudaErrorCapturedEvent";
    }
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t rc)
{
    switch (rc) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument (emulated)";
    case cudaErrorMemoryAllocation: return "out of memory (emulated)";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument (emulated)";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected (emulated)";
    case cudaErrorNotSupported: return "operation not supported (emulated)";
    case cudaErrorStreamCaptureUnsupported:
        return "operation not permitted when stream is capturing (emulated)";
    case cudaErrorStreamCaptureInvalidated:
        return "operation failed due to a previous error during capture (emulated)";
    case cudaErrorStreamCaptureUnjoined:
        return "capture sequence contains a fork that was not joined to the primary stream "
               "(emulated)";
    case cudaErrorStreamCaptureIsolation:
        return "dependency created on uncaptured work in another stream (emulated)";
    case cudaErrorCapturedEvent:
        return "operation not permitted on an event last recorded in a capturing stream "
               "(emulated)";
    }
    return "unknown error (emulated)";
}

/* ---- cuBLAS --------------------------------------------------------------------------------- */

struct emu_blas {
    cudaStream_t stream;
    cublasMath_t math;
};

cublasStatus_t cublasCreate(cublasHandle_t *handle)
{
    *handle = new emu_blas{NULL, CUBLAS_DEFAULT_MATH};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream)
{
    handle->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void *workspace, size_t bytes)
{
    (void)handle, (void)workspace, (void)bytes;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    handle->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t status)
{
    return status == CUBLAS_STATUS_SUCCESS       ? "CUBLAS_STATUS_SUCCESS"
           : status == CUBLAS_STATUS_NOT_SUPPORTED ? "CUBLAS_STATUS_NOT_SUPPORTED"
                                                   : "CUBLAS_STATUS_INVALID_VALUE";
}

/* a column-major operand of ld x cols rounded to TF32 (float only: tensor cores' reading) */
template <typename T> static std::vector<T> tf32_copy(const T *a, int ld, int cols)
{
    std::vector<T> r((size_t)ld * (size_t)cols);
    for (size_t i = 0; i < r.size(); i++) r[i] = (T)nvcuda::wmma::__float_to_tf32((float)a[i]);
    return r;
}

static void host_gemm(bool ta, bool tb, int m, int n, int k, float al, const float *a, int lda,
                      const float *b, int ldb, float be, float *c, int ldc)
{
    cblas_sgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m,
                n, k, al, a, lda, b, ldb, be, c, ldc);
}

static void host_gemm(bool ta, bool tb, int m, int n, int k, double al, const double *a, int lda,
                      const double *b, int ldb, double be, double *c, int ldc)
{
    cblas_dgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m,
                n, k, al, a, lda, b, ldb, be, c, ldc);
}

/* cuBLAS's strided-batched gemm, column-major, queued on the handle's stream */
template <typename T>
static cublasStatus_t gemm_strided(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                   int m, int n, int k, const T *alpha, const T *A, int lda,
                                   long long sA, const T *B, int ldb, long long sB, const T *beta,
                                   T *C, int ldc, long long sC, int batch)
{
    /* what cuBLAS refuses (CUBLAS_STATUS_INVALID_VALUE), where OpenBLAS would only print */
    const int lda_min = ta ? k : m, ldb_min = tb ? n : k;
    if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < (lda_min > 1 ? lda_min : 1) ||
        ldb < (ldb_min > 1 ? ldb_min : 1) || ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    const T al = *alpha, be = *beta;
    const bool tf32 = std::is_same_v<T, float> && h->math == CUBLAS_TF32_TENSOR_OP_MATH;
    cudaError_t rc = enqueue(h->stream, [=]() {
        for (int b = 0; b < batch; b++) {
            const T *a = A + b * sA, *bb = B + b * sB;
            std::vector<T> ra, rb;
            if (tf32 && k > 0) {
                ra = tf32_copy(a, lda, ta ? m : k);
                rb = tf32_copy(bb, ldb, tb ? k : n);
                a = ra.data(), bb = rb.data();
            }
            host_gemm(ta, tb, m, n, k, al, a, lda, bb, ldb, be, C + b * sC, ldc);
        }
    });
    return rc ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long sA, const float *B, int ldb, long long sB,
                                         const float *beta, float *C, int ldc, long long sC,
                                         int batch)
{
    return gemm_strided(h, ta, tb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC,
                        batch);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const double *alpha, const double *A, int lda,
                                         long long sA, const double *B, int ldb, long long sB,
                                         const double *beta, double *C, int ldc, long long sC,
                                         int batch)
{
    return gemm_strided(h, ta, tb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC,
                        batch);
}

/* ---- cuBLASLt ------------------------------------------------------------------------------- */

struct emu_lt {
    int unused;
};

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle)
{
    static emu_lt one;
    *handle = &one;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescInit(cublasLtMatmulDesc_t desc, cublasComputeType_t compute,
                                      cudaDataType_t scale)
{
    *desc = {compute, scale, CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_DEFAULT, NULL, -1};
    return CUBLAS_STATUS_SUCCESS;
}

/* an attribute of the size cuBLASLt gives it (int32_t for the enums), else refused */
template <typename F> static cublasStatus_t set_attr(F *field, const void *buf, size_t bytes)
{
    if (bytes != sizeof *field) return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(field, buf, bytes);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t bytes)
{
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
        return set_attr(&desc->ta, buf, bytes);
    case CUBLASLT_MATMUL_DESC_TRANSB:
        return set_attr(&desc->tb, buf, bytes);
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
        return set_attr(&desc->epilogue, buf, bytes);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
        return set_attr(&desc->bias, buf, bytes);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
        return set_attr(&desc->bias_type, buf, bytes);
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatrixLayoutInit(cublasLtMatrixLayout_t layout, cudaDataType type,
                                        uint64_t rows, uint64_t cols, int64_t ld)
{
    *layout = {type, rows, cols, ld};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceInit(cublasLtMatmulPreference_t pref)
{
    *pref = {0, {256, 256, 256, 256}};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t bytes)
{
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
        return set_attr(&pref->workspace, buf, bytes);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
        return set_attr(&pref->align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf,
                        bytes);
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* what cuBLASLt refuses whatever the algorithm: types other than the compute type's, layouts
 * that do not fit the operations (D m x n, op(A) m x k, op(B) k x n), a leading dimension
 * under the rows, an epilogue other than none or the bias, the bias epilogue without a bias
 * of D's type; m, n, k are set */
static bool lt_valid(const cublasLtMatmulDescOpaque_t *o, const cublasLtMatrixLayoutOpaque_t *a,
                     const cublasLtMatrixLayoutOpaque_t *b, const cublasLtMatrixLayoutOpaque_t *c,
                     const cublasLtMatrixLayoutOpaque_t *d, uint64_t *m, uint64_t *n,
                     uint64_t *k)
{
    const cudaDataType_t t = o->compute == CUBLAS_COMPUTE_64F ? CUDA_R_64F : CUDA_R_32F;
    const bool ta = o->ta == CUBLAS_OP_T, tb = o->tb == CUBLAS_OP_T;
    *m = d->rows, *n = d->cols, *k = ta ? a->rows : a->cols;
    for (const cublasLtMatrixLayoutOpaque_t *l : {a, b, c, d})
        if (l->type != t || l->ld < (int64_t)std::max<uint64_t>(l->rows, 1)) return false;
    if (o->scale != t || (ta ? a->cols : a->rows) != *m || (tb ? b->rows : b->cols) != *n ||
        (tb ? b->cols : b->rows) != *k || c->rows != *m || c->cols != *n)
        return false;
    if (o->epilogue == CUBLASLT_EPILOGUE_BIAS)
        return o->bias && (o->bias_type == -1 || o->bias_type == (int)t);
    return o->epilogue == CUBLASLT_EPILOGUE_DEFAULT;
}

#define LT_MADE 0x4c54414c474fULL /* an algorithm the heuristic made */

/* the largest power of two (at most 256) that divides p's address */
static uint64_t align_of(const void *p)
{
    uint64_t a = 256;
    while (a > 1 && (uintptr_t)p % a) a /= 2;
    return a;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t *results,
                                              int *returned)
{
    uint64_t m, n, k;
    *returned = 0;
    if (!handle || requested < 1 || !lt_valid(desc, a, b, c, d, &m, &n, &k))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 1 || n == 1 || k == 1) return CUBLAS_STATUS_NOT_SUPPORTED;
    results[0] = {};
    results[0].algo.data[0] = LT_MADE;
    for (int i = 0; i < 4; i++) results[0].algo.data[1 + i] = pref->align[i];
    results[0].algo.data[5] = desc->epilogue == CUBLASLT_EPILOGUE_BIAS ? align_of(desc->bias) : 1;
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1;
    *returned = 1;
    return CUBLAS_STATUS_SUCCESS;
}

/* D = alpha op(A) op(B) + beta C, then + bias[i] in every row i: queued on the stream */
template <typename T>
static cudaError_t lt_queue(cudaStream_t stream, bool tf32, bool ta, bool tb, int m, int n, int k,
                            T al, const T *A, int lda, const T *B, int ldb, T be, T *D, int ldd,
                            const T *bias)
{
    return enqueue(stream, [=]() {
        const T *a = A, *b = B;
        std::vector<T> ra, rb;
        if (tf32 && k > 0) {
            ra = tf32_copy(A, lda, ta ? m : k);
            rb = tf32_copy(B, ldb, tb ? k : n);
            a = ra.data(), b = rb.data();
        }
        host_gemm(ta, tb, m, n, k, al, a, lda, b, ldb, be, D, ldd);
        if (bias)
            for (int j = 0; j < n; j++)
                for (int i = 0; i < m; i++) D[i + (int64_t)j * ldd] += bias[i];
    });
}

/* As cuBLASLt's, but C must be D where beta is not 0 (the backend's only use) */
cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                              const void *alpha, const void *A, cublasLtMatrixLayout_t a,
                              const void *B, cublasLtMatrixLayout_t b, const void *beta,
                              const void *C, cublasLtMatrixLayout_t c, void *D,
                              cublasLtMatrixLayout_t d, const cublasLtMatmulAlgo_t *algo,
                              void *workspace, size_t workspace_bytes, cudaStream_t stream)
{
    (void)workspace, (void)workspace_bytes;
    uint64_t m, n, k;
    if (!handle || !algo || algo->data[0] != LT_MADE || !lt_valid(desc, a, b, c, d, &m, &n, &k))
        return CUBLAS_STATUS_INVALID_VALUE;
    /* a bias off 16 bytes is refused whatever the plan: the heuristic takes no preference for
     * its alignment, and the epilogue has been reported to fault below 16 bytes on an A100
     * (Marian NMT's prod.cpp); the backend sends such a bias the other way (matmul.cu) */
    if (desc->epilogue == CUBLASLT_EPILOGUE_BIAS && (uintptr_t)desc->bias % 16)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    const void *ptr[5] = {A, B, C, D, desc->bias};
    for (int i = 0; i < 5; i++)
        if ((i < 4 || desc->epilogue == CUBLASLT_EPILOGUE_BIAS) &&
            (uintptr_t)ptr[i] % algo->data[1 + i])
            return CUBLAS_STATUS_INVALID_VALUE;
    const bool ta = desc->ta == CUBLAS_OP_T, tb = desc->tb == CUBLAS_OP_T;
    const bool bias = desc->epilogue == CUBLASLT_EPILOGUE_BIAS;
    cudaError_t rc;
    if (desc->compute == CUBLAS_COMPUTE_64F) {
        const double be = *(const double *)beta;
        if (be != 0 && C != D) return CUBLAS_STATUS_NOT_SUPPORTED;
        rc = lt_queue(stream, false, ta, tb, (int)m, (int)n, (int)k, *(const double *)alpha,
                      (const double *)A, (int)a->ld, (const double *)B, (int)b->ld, be,
                      (double *)D, (int)d->ld, bias ? (const double *)desc->bias : NULL);
    } else {
        const float be = *(const float *)beta;
        if (be != 0 && C != D) return CUBLAS_STATUS_NOT_SUPPORTED;
        rc = lt_queue(stream, desc->compute == CUBLAS_COMPUTE_32F_FAST_TF32, ta, tb, (int)m,
                      (int)n, (int)k, *(const float *)alpha, (const float *)A, (int)a->ld,
                      (const float *)B, (int)b->ld, be, (float *)D, (int)d->ld,
                      bias ? (const float *)desc->bias : NULL);
    }
    return rc ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_SUCCESS;
}
