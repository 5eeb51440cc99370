/* cuda_emu/include/cuda_runtime.h: the CUDA runtime as the emulator gives it (make CUDA_EMU=1,
 * tests/cuda_emu/emu.cc): the backend's .cu files compiled by g++ as C++ and run on the CPU, so
 * that their logic (indices, tiles, barriers, masks, the step bracket's capture and replay) is
 * tested on a machine without a GPU. Device memory is host memory filled with NaN bytes when
 * allocated and ending at a guard page, as does a block's dynamic shared memory (an access
 * past either stops the run); a kernel's threads are fibers, a block's run to each barrier in
 * turn; warp shuffles and ballots exchange through the scheduler; a stream capture records
 * what it is given, with its edges (stream order, event waits across streams), and a graph
 * launch replays it, other streams' nodes as late as their edges allow. Calls a real capture
 * refuses (allocation, host waits, copies from pageable memory, a fork not joined) fail as
 * they would there. Streams run their work when the host waits for it, or at once
 * (TT_EMU_SCHEDULE, emu.cc); a stream's work follows another's only where it waits on its
 * event. It is no model of timing,
 * memory ordering or the hardware's arithmetic: a test here says a kernel computes the right
 * thing, not that it is fast or free of races. Only the subset the backend uses is here. */
#ifndef TT_CUDA_EMU_RUNTIME_H
#define TT_CUDA_EMU_RUNTIME_H
/* for the few device functions that take another path here (cp.async: attention.cuh) */
#define TT_CUDA_EMULATED 1

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
/* a block's shared arrays: blocks run one after another, so one static copy serves them all */
#define __shared__ static

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
    unsigned x, y, z;
};
/* the running fiber's: set by the scheduler at every switch */
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;

#include "cuda_runtime_api.h"

/* ---- inside kernels ------------------------------------------------------------------------- */

namespace emu {
/* __syncthreads at file:line: every thread of the block must wait at the same one (the source
 * line, not the call's address: the compiler may duplicate a barrier's code) */
void syncthreads_at(const char *file, int line);
} // namespace emu
#define __syncthreads() emu::syncthreads_at(__FILE__, __LINE__)
void __syncwarp(unsigned mask = 0xffffffffu);

namespace emu {
enum warp_op { SHFL_XOR, SHFL_IDX, BALLOT };
/* this lane's 8 bytes in, the op's result for this lane out, once every lane of the warp
 * has called it (the same op) */
uint64_t warp_exchange(unsigned mask, warp_op op, uint64_t bits, int arg);

template <typename T> static inline uint64_t to_bits(T v)
{
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "a shuffle of 8 bytes");
    uint64_t b = 0;
    memcpy(&b, &v, sizeof v);
    return b;
}

template <typename T> static inline T from_bits(uint64_t b)
{
    T v;
    memcpy(&v, &b, sizeof v);
    return v;
}
} // namespace emu

template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask)
{
    return emu::from_bits<T>(emu::warp_exchange(mask, emu::SHFL_XOR, emu::to_bits(v), lane_mask));
}

template <typename T> static inline T __shfl_sync(unsigned mask, T v, int src)
{
    return emu::from_bits<T>(emu::warp_exchange(mask, emu::SHFL_IDX, emu::to_bits(v), src));
}

static inline unsigned __ballot_sync(unsigned mask, int pred)
{
    return (unsigned)emu::warp_exchange(mask, emu::BALLOT, pred != 0, 0);
}

namespace emu {
/* cp.async as attention.cuh issues it: n bytes (4, 8 or 16, both addresses aligned to n) from
 * src to dst, the first `have` of them copied and the rest zeros; copy_commit closes this
 * thread's group of copies, copy_wait(k) makes all but its newest k groups land. A copy lands
 * at the wait in even blocks and at once in odd ones (those that run their threads last to
 * first), so that a read before the wait and a copy over bytes that another thread has yet to
 * read both give wrong results; a thread that returns with copies not waited for stops the run. */
void copy_async(void *dst, const void *src, size_t n, size_t have);
void copy_commit(void);
void copy_wait(int k);
} // namespace emu

static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline double __dmul_rn(double a, double b) { return a * b; }

/* ---- launches: prep.py rewrites k<<<grid, block, smem, stream>>>(args) as
 * emu::launch(emu::cfg(grid, block, smem, stream), k, args) ---------------------------------- */

namespace emu {
struct cfg {
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    cfg(dim3 g, dim3 b, size_t s = 0, cudaStream_t st = 0) : grid(g), block(b), smem(s), stream(st)
    {
    }
};

/* runs (or, while the stream is captured, records) body once per thread of c's grid */
void run(const cfg &c, const void *kernel, std::function<void()> body);

/* the arguments converted to the kernel's parameter types at the launch, as CUDA copies them */
template <typename... P, typename... A> void launch(const cfg &c, void (*k)(P...), A &&...a)
{
    std::tuple<std::decay_t<P>...> args{std::forward<A>(a)...};
    run(c, (const void *)k, [k, args]() { std::apply(k, args); });
}

/* the dynamic shared memory of the running block (extern __shared__), NaN bytes at its start */
unsigned char *dynamic_smem(void);
} // namespace emu

#endif
