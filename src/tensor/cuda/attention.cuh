/* cuda/attention.cuh: what the fused attention implementations share (C++ only): the
 * float-core kernels of attention.cu and the tensor-core (TF32 wmma) kernels of
 * attention_tc.cu, which give a block 32 query (or key) rows of one head and 8 warps, keep a
 * block's score rows in shared memory, and run the same row passes over them: the masked
 * softmax with the dropout mask (Philox, bit for bit the CPU's) and dS = P (dP - rowsum(dP P));
 * only their products differ. attention_mma.cu (scores in registers, 16 rows a warp) takes
 * from here the grid, a head's offsets, the dropout mask's elements, the cp.async pipeline and
 * the shared-memory and residency helpers. */
#ifndef TT_CUDA_ATTENTION_CUH
#define TT_CUDA_ATTENTION_CUH

#include "tensor/cuda/common.cuh" /* warp_sum, warp_max */

#include <cuda_runtime.h>

#include <type_traits>

/* A block: 8 warps over ROWS rows, RW rows per warp in the row passes; products go over chunks
 * staged in shared memory (attention.cu's WKC, attention_tc.cu's KC of the inner dimension)
 * and give column tiles CT wide. */
#define THREADS 256
#define ROWS 32
#define RW 4
#define CT 64

TT_HD static inline int imin(int x, int y)
{
    return x < y ? x : y;
}
TT_HD static inline int round_up(int x, int m)
{
    return (x + m - 1) / m * m;
}

/* What a block of grid_of works on: head h = blockIdx.y of batch b = blockIdx.z, rows from
 * row0 (query rows in the forward and dq kernels, key rows in dkv). */
static __device__ __forceinline__ int row0(void)
{
    return (int)blockIdx.x * ROWS;
}

/* the block's head as an index b NH + h into (B, NH, ...) */
static __device__ __forceinline__ int64_t head_index(const tt_attn_desc &a)
{
    return (int64_t)blockIdx.z * a.NH + blockIdx.y;
}

/* offset of the block's head, row 0, in a (B, T, ld) tensor */
static __device__ __forceinline__ int64_t head_at(const tt_attn_desc &a, int ld)
{
    return (int64_t)blockIdx.z * a.T * ld + (int64_t)blockIdx.y * a.HS;
}

/* the keys query rows i0 .. i0+ROWS-1 can see: past them every key is causally masked */
static __device__ __forceinline__ int keys_seen(const tt_attn_desc &a, int i0)
{
    return a.causal ? imin(a.T, i0 + ROWS) : a.T;
}

/* The dropout mask's Philox element: keep (b, h, i, j) is element ((b NH + h) T + i) T + j of
 * the draw at `at`, i.e. word e % 4 of Philox block e / 4 of (seed, stream) with
 * e = at.counter + that index, exactly as cpu/attention.c's tt_cpu_keep_mask(keep, &at,
 * bh T T, T T, p) and tests/test_attention_ref.c's check_keep see it. */
TT_HD static inline uint64_t keep_element(const tt_rng *at, int64_t bh, int T, int i, int j)
{
    return at->counter + (uint64_t)(((bh * T + i) * (int64_t)T) + j);
}

/* src[at], times s where keep (src's layout) is given and keeps it, 0 where it drops */
static __device__ __forceinline__ real kept(const real *src, const uint8_t *keep, real s,
                                            int64_t at)
{
    real x = src[at];
    if (!keep) return x;
    real y = x * s;
    return keep[at] ? y : R(0);
}

/* dst[r ldt + c] = kept(src, keep, s, r lds + c) for r < NR, c < NC; 0 where r >= nr or
 * c >= nc (both at least 1), so products over a partial tile add zeros. Consecutive threads
 * read consecutive columns. Every thread's loads come first, with no
 * branch between them (an index past the edge reads the edge's element, then 0 is kept), so
 * that they wait on memory together instead of one after another. */
template <int NR, int NC>
static __device__ inline void load_tile(real *dst, int ldt, const real *src, const uint8_t *keep,
                                        real s, int64_t lds, int nr, int nc)
{
    static_assert(NR * NC % THREADS == 0, "a tile is whole rounds of the block's threads");
    constexpr int N = NR * NC / THREADS;
    real x[N];
#pragma unroll
    for (int u = 0; u < N; u++) {
        const int e = (int)threadIdx.x + u * THREADS, r = e / NC, c = e % NC;
        const real y = kept(src, keep, s, (int64_t)imin(r, nr - 1) * lds + imin(c, nc - 1));
        x[u] = r < nr && c < nc ? y : R(0);
    }
#pragma unroll
    for (int u = 0; u < N; u++) {
        const int e = (int)threadIdx.x + u * THREADS, r = e / NC, c = e % NC;
        dst[r * ldt + c] = x[u];
    }
}

/* ---- staging in the background: cp.async (sm_80 and later) ---------------------------------
 * A thread's copies go from global to shared memory while it computes; copies_commit closes
 * the group of those issued since the last, copies_wait<N> returns once all but the newest N
 * groups are in (this thread's own: a barrier shows them to the others). The emulator holds
 * each copy until the wait (or makes it at once in odd blocks), so that a read before the wait,
 * or a copy over what another thread still reads, shows as a wrong result. */
static __device__ __forceinline__ void copy_async(real *dst, const real *src, bool have)
{
#if defined(__CUDA_ARCH__)
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(d), "l"(src),
                 "n"((int)sizeof(real)), "r"(have ? (int)sizeof(real) : 0)
                 : "memory");
#elif defined(TT_CUDA_EMULATED)
    emu::copy_async(dst, src, sizeof(real), have ? sizeof(real) : 0);
#else /* nvcc's host pass, which never runs device code */
    (void)dst, (void)src, (void)have;
#endif
}

/* VEC reals in 16 bytes: one copy_async16 moves them */
#define VEC ((int)(16 / sizeof(real)))

/* dst[0 .. VEC) = src[0 .. have), zeros after (have <= VEC): one 16-byte cp.async, both
 * pointers 16-byte aligned; it bypasses L1 (.cg: only 16-byte copies may), as the operands
 * are read once a block, again only by other blocks, through L2 */
static __device__ __forceinline__ void copy_async16(real *dst, const real *src, int have)
{
#if defined(__CUDA_ARCH__)
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                 "r"(have * (int)sizeof(real))
                 : "memory");
#elif defined(TT_CUDA_EMULATED)
    emu::copy_async(dst, src, 16, (size_t)have * sizeof(real));
#else
    (void)dst, (void)src, (void)have;
#endif
}

static __device__ __forceinline__ void copies_commit(void)
{
#if defined(__CUDA_ARCH__)
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#elif defined(TT_CUDA_EMULATED)
    emu::copy_commit();
#endif
}

template <int N> static __device__ __forceinline__ void copies_wait(void)
{
#if defined(__CUDA_ARCH__)
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#elif defined(TT_CUDA_EMULATED)
    emu::copy_wait(N);
#endif
}

/* load_tile's element map without keep or transpose, through copy_async: dst[r ldt + c] =
 * src[r lds + c] for r < NR, c < NC, zeros past nr, nc; nothing lands before copies_wait.
 * Where src, lds and ldt allow it (and vec: a caller that maps the elements to threads itself,
 * as fetch_keep does, says false), VEC reals a copy: a quarter of the instructions. */
template <int NR, int NC>
static __device__ __forceinline__ void copy_tile(real *dst, int ldt, const real *src, int64_t lds,
                                                 int nr, int nc, bool vec = true)
{
    static_assert(NR * NC % THREADS == 0, "a tile is whole rounds of the block's threads");
    if constexpr (NC % VEC == 0 && NR * NC / VEC % THREADS == 0) {
        if (vec && ldt % VEC == 0 && lds % VEC == 0 && (uintptr_t)src % 16 == 0) {
#pragma unroll
            for (int u = 0; u < NR * NC / VEC / THREADS; u++) {
                const int e = (int)threadIdx.x + u * THREADS, r = e / (NC / VEC);
                const int c = e % (NC / VEC) * VEC, have = r < nr ? imin(VEC, nc - c) : 0;
                /* past the edge: nothing read, from an aligned element inside */
                const int64_t at = (int64_t)imin(r, nr - 1) * lds + (have > 0 ? c : 0);
                copy_async16(dst + r * ldt + c, src + at, have > 0 ? have : 0);
            }
            return;
        }
    }
#pragma unroll
    for (int u = 0; u < NR * NC / THREADS; u++) {
        const int e = (int)threadIdx.x + u * THREADS, r = e / NC, c = e % NC;
        copy_async(dst + r * ldt + c, src + (int64_t)imin(r, nr - 1) * lds + imin(c, nc - 1),
                   r < nr && c < nc);
    }
}

/* The keep bytes of the elements copy_tile<NR, NC> copies for this thread one at a time
 * (clamped as its sources are), packed four to a word, and, once they are in, load_tile's
 * kept() applied to them in place: the dropout mask of a staged D = att keep s, its bytes
 * loaded while the chunk is on its way. */
#define KEEP_WORDS(NR, NC) (((NR) * (NC) / THREADS + 3) / 4)

template <int NR, int NC>
static __device__ __forceinline__ void fetch_keep(uint32_t kb[KEEP_WORDS(NR, NC)],
                                                  const uint8_t *keep, int64_t lds, int nr,
                                                  int nc)
{
    uint8_t x[NR * NC / THREADS];
#pragma unroll
    for (int u = 0; u < NR * NC / THREADS; u++) {
        const int e = (int)threadIdx.x + u * THREADS, r = e / NC, c = e % NC;
        x[u] = keep[(int64_t)imin(r, nr - 1) * lds + imin(c, nc - 1)];
    }
#pragma unroll
    for (int w = 0; w < KEEP_WORDS(NR, NC); w++) kb[w] = 0;
#pragma unroll
    for (int u = 0; u < NR * NC / THREADS; u++) kb[u / 4] |= (uint32_t)x[u] << 8 * (u % 4);
}

template <int NR, int NC>
static __device__ __forceinline__ void apply_keep(real *dst, int ldt,
                                                  const uint32_t kb[KEEP_WORDS(NR, NC)], real s)
{
#pragma unroll
    for (int u = 0; u < NR * NC / THREADS; u++) {
        const int e = (int)threadIdx.x + u * THREADS;
        real *x = dst + e / NC * ldt + e % NC;
        const real y = *x * s;
        *x = (kb[u / 4] >> 8 * (u % 4) & 0xffu) ? y : R(0);
    }
}

/* copy_tile of a chunk of which D = chunk keep s is wanted (keep given: its bytes into kb, for
 * apply_keep once the chunk is in) */
template <int NR, int NC>
static __device__ __forceinline__ void copy_kept_tile(real *dst, int ldt, const real *src,
                                                      const uint8_t *keep,
                                                      uint32_t kb[KEEP_WORDS(NR, NC)],
                                                      int64_t lds, int nr, int nc)
{
    copy_tile<NR, NC>(dst, ldt, src, lds, nr, nc, !keep); /* apply_keep's map: one a thread */
    if (keep) fetch_keep<NR, NC>(kb, keep, lds, nr, nc);
}

/* the land of a pipeline whose chunks are used as they come */
struct land_nothing {
    __device__ void operator()(int, real *, int) const {}
};

/* Chunks 0 .. n-1 through NST staging buffers, slot s at buf + s stride: stage(c, b, s) starts
 * chunk c's copies into slot s's buffer b, land(c, b, s) runs in each thread once its own
 * copies of chunk c are in, and use(c, b) reads b after a barrier, while the copies of chunks
 * c + 1 .. c + NST - 1 are on their way (NST - 1 chunks ahead: one chunk's wait for memory,
 * a whole round trip at a time, left base's blocks idle most of their time). One barrier a
 * chunk: it also tells stage(c + NST - 1) that use(c - 1), the readers of the slot it refills,
 * is done. Chunk c has slot c % NST; where land does something (cols_times's keep bytes, in
 * registers by slot) the loop is unrolled NST times, so that the slot is known to the compiler
 * and those stay registers.
 * pipeline_start issues the first NST - 1 chunks: a kernel may call it early, with the
 * buffers free, to have them on their way during other work (the row passes), then
 * pipeline_run; pipeline does both at once. */
template <int NST, class Stage>
static __device__ __forceinline__ void pipeline_start(int n, real *buf, int stride, Stage stage)
{
    static_assert(NST >= 2, "a pipeline has two buffers at least");
#pragma unroll
    for (int s = 0; s < NST - 1; s++) {
        if (s < n) stage(s, buf + s * stride, s);
        copies_commit(); /* empty past n: every chunk is one group, whatever n */
    }
}

template <int NST, class Stage, class Land, class Use>
static __device__ __forceinline__ void pipeline_run(int n, real *buf, int stride, Stage stage,
                                                    Land land, Use use)
{
    if constexpr (std::is_same_v<Land, land_nothing>) { /* a plain loop: unrolled, kernels
                                                           near 128 registers spilled */
        for (int c = 0; c < n; c++) {
            const int s = c % NST, next = (c + NST - 1) % NST;
            copies_wait<NST - 2>(); /* chunk c's group, the newest NST - 2 may be out */
            __syncthreads();
            if (c + NST - 1 < n) stage(c + NST - 1, buf + next * stride, next);
            copies_commit();
            use(c, buf + s * stride);
        }
    } else {
        for (int c0 = 0; c0 < n; c0 += NST) {
#pragma unroll
            for (int s = 0; s < NST; s++) {
                const int c = c0 + s, next = (s + NST - 1) % NST;
                if (c >= n) break; /* the same for the whole block */
                real *b = buf + s * stride;
                copies_wait<NST - 2>();
                land(c, b, s);
                __syncthreads();
                if (c + NST - 1 < n) stage(c + NST - 1, buf + next * stride, next);
                copies_commit();
                use(c, b);
            }
        }
    }
}

template <int NST, class Stage, class Land, class Use>
static __device__ __forceinline__ void pipeline(int n, real *buf, int stride, Stage stage,
                                                Land land, Use use)
{
    __syncthreads(); /* what read the buffers before (another product) is done */
    pipeline_start<NST>(n, buf, stride, stage);
    pipeline_run<NST>(n, buf, stride, stage, land, use);
}

/* Dropout on row i of head bh, whose P is in row: keep[j] = Philox keep bit, row[j] = P keep s.
 * A lane takes whole Philox blocks (4 consecutive elements): each block is computed once. */
static __device__ inline void drop_row(real *row, uint8_t *krow, tt_rng at, uint32_t thr, real s,
                                       int64_t bh, int T, int i)
{
    const uint64_t e0 = keep_element(&at, bh, T, i, 0), e1 = e0 + (uint64_t)T;
    for (uint64_t blk = (e0 >> 2) + threadIdx.x % 32; blk <= (e1 - 1) >> 2; blk += 32) {
        uint32_t wd[4];
        tt_philox_block(at.seed, at.stream, blk, wd);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            uint64_t e = 4 * blk + (uint64_t)k;
            if (e < e0 || e >= e1) continue;
            int j = (int)(e - e0), kp = tt_philox_keep(wd[k], thr);
            real x = row[j] * s;
            krow[j] = (uint8_t)kp;
            row[j] = kp ? x : R(0);
        }
    }
}

/* row[j] = 0 for j in [from, to), a warp's lanes j apart */
static __device__ __forceinline__ void zero_span(real *row, int from, int to)
{
    for (int j = from + (int)(threadIdx.x % 32); j < to; j += 32)
        row[j] = R(0);
}

/* This warp's RW rows of S (row stride lds; scores of keys < kend, past kend every key is
 * causally masked) become P, written to att; with keep, dropout; S keeps D for O = D V.
 * Columns [T, Tp) and rows past the last query become zeros, so that products over whole
 * chunks of 8 keys (the tensor cores') read finite values. pad: batch b's (T) or NULL. */
static __device__ inline void softmax_rows(real *S, int lds, int Tp, real *att, uint8_t *keep,
                                           const int32_t *pad, bool causal, tt_rng at, uint32_t thr,
                                           real s, int64_t bh, int T, int i0, int kend)
{
    const int lane = (int)(threadIdx.x % 32);
    const int r0 = RW * (int)(threadIdx.x / 32);
    for (int r = r0; r < r0 + RW; r++) {
        const int i = i0 + r;
        real *row = S + (int64_t)r * lds;
        if (i >= T) { /* past the last query */
            zero_span(row, 0, Tp);
            continue;
        }
        real m = -R_INF;
        for (int j = lane; j < T; j += 32) {
            bool masked = j >= kend || (causal && j > i) || (pad && pad[j]);
            real x = masked ? -R_INF : row[j];
            row[j] = x;
            m = x > m ? x : m;
        }
        m = warp_max(m);
        real sum = R(0);
        for (int j = lane; j < T; j += 32) {
            real e = m == -R_INF ? R(0) : R_EXP(row[j] - m);
            row[j] = e;
            sum += e;
        }
        sum = warp_sum(sum);
        real inv = sum > R(0) ? R(1) / sum : R(0); /* sum >= 1 unless every key is masked */
        real *arow = att + (bh * T + i) * T;
        for (int j = lane; j < T; j += 32) {
            real p = row[j] * inv;
            row[j] = p;
            arow[j] = p;
        }
        zero_span(row, T, Tp);
        if (keep) {
            __syncwarp(); /* drop_row's lanes own other j */
            drop_row(row, keep + (bh * T + i) * T, at, thr, s, bh, T, i);
        }
    }
}

/* DS_U: the columns of a row a lane takes at a time in ds_rows, their att and keep loads issued
 * together (one after another, each waited for, they were a long wait a row) */
#define DS_U 4

/* DS_ROW: the columns a lane holds of a whole row where T <= 32 DS_ROW (every bench shape's):
 * att and keep loaded once, in one round trip, where the loop below waits four times for
 * T = 256 (twice a pass, and att again in the second). Holding the next row's too, to have it
 * under way during this row's sums, pushed dq_kernel (128 registers) into spills. */
#define DS_ROW 8

/* ds_rows's two element steps: row[j] = dP (dD keep s; 0 past kend), returned; then row[j] =
 * dS = P (dP - dot), also into ds (at e0 + j) when given */
static __device__ __forceinline__ real dp_at(real *row, int j, int kend, bool keep, bool kept,
                                             real s)
{
    real g = j < kend ? row[j] : R(0);
    if (keep) {
        real x = g * s;
        g = kept ? x : R(0);
    }
    row[j] = g;
    return g;
}

static __device__ __forceinline__ void ds_at(real *row, real *ds, int64_t e0, int j, real p,
                                             real dot)
{
    real d = p * (row[j] - dot);
    row[j] = d;
    if (ds) ds[e0 + j] = d;
}

/* a row's att (past T: the row's last element, unused) and keep bits (bit u: keep of column
 * lane + 32 u; 1 without dropout), loaded together */
struct ds_row_in {
    real p[DS_ROW];
    uint32_t kb;
};

static __device__ __forceinline__ void ds_fetch(ds_row_in &in, const real *att,
                                                const uint8_t *keep, int64_t e0, int T)
{
    const int lane = (int)(threadIdx.x % 32);
    uint8_t k[DS_ROW];
#pragma unroll
    for (int u = 0; u < DS_ROW; u++) {
        const int64_t e = e0 + imin(lane + 32 * u, T - 1);
        in.p[u] = att[e];
        k[u] = keep ? keep[e] : 1;
    }
    in.kb = 0;
#pragma unroll
    for (int u = 0; u < DS_ROW; u++) in.kb |= (uint32_t)(k[u] != 0) << u;
}

/* ds_rows for one row held in `in` (T <= 32 DS_ROW): the same sums in the same order */
static __device__ __forceinline__ void ds_row(real *row, real *ds, const ds_row_in &in,
                                              bool keep, real s, int64_t e0, int T, int kend)
{
    const int lane = (int)(threadIdx.x % 32);
    real dot = R(0);
#pragma unroll
    for (int u = 0; u < DS_ROW; u++) {
        const int j = lane + 32 * u;
        if (j < T) dot += dp_at(row, j, kend, keep, in.kb >> u & 1u, s) * in.p[u];
    }
    dot = warp_sum(dot);
#pragma unroll
    for (int u = 0; u < DS_ROW; u++) {
        const int j = lane + 32 * u;
        if (j < T) ds_at(row, ds, e0, j, in.p[u], dot);
    }
}

/* This warp's RW rows of S (row stride lds) hold dD = dO V^T (keys < kend; past kend P = 0);
 * S becomes dS = P (dP - sum_j dP P), dP = dD keep s (keep NULL: dD), also written to ds when
 * given. Columns [T, Tp) and rows past the last query become zeros, as in softmax_rows. */
static __device__ inline void ds_rows(real *S, int lds, int Tp, real *ds, const real *att,
                                      const uint8_t *keep, real s, int64_t bh, int T, int i0,
                                      int kend)
{
    const int lane = (int)(threadIdx.x % 32);
    const int r0 = RW * (int)(threadIdx.x / 32);
    if (T <= 32 * DS_ROW) { /* rows held whole: one round trip a row */
#pragma unroll 1
        for (int u = 0; u < RW; u++) {
            const int i = i0 + r0 + u;
            real *row = S + (int64_t)(r0 + u) * lds;
            if (i >= T) { /* past the last query */
                zero_span(row, 0, Tp);
                continue;
            }
            ds_row_in in;
            ds_fetch(in, att, keep, (bh * T + i) * T, T);
            ds_row(row, ds, in, keep != NULL, s, (bh * T + i) * T, T, kend);
            zero_span(row, T, Tp);
        }
        return;
    }
    for (int r = r0; r < r0 + RW; r++) {
        const int i = i0 + r;
        real *row = S + (int64_t)r * lds;
        if (i >= T) { /* past the last query */
            zero_span(row, 0, Tp);
            continue;
        }
        const int64_t e0 = (bh * T + i) * T;
        const real *prow = att + e0;
        real dot = R(0), p[DS_U];
        uint8_t kb[DS_U];
        for (int j0 = lane; j0 < T; j0 += 32 * DS_U) {
#pragma unroll
            for (int u = 0; u < DS_U; u++) { /* past T: the row's last element, unused */
                const int j = imin(j0 + 32 * u, T - 1);
                p[u] = prow[j];
                kb[u] = keep ? keep[e0 + j] : 1;
            }
#pragma unroll
            for (int u = 0; u < DS_U; u++) {
                const int j = j0 + 32 * u;
                if (j < T) dot += dp_at(row, j, kend, keep != NULL, kb[u] != 0, s) * p[u];
            }
        }
        dot = warp_sum(dot);
        for (int j0 = lane; j0 < T; j0 += 32 * DS_U) {
#pragma unroll
            for (int u = 0; u < DS_U; u++) p[u] = prow[imin(j0 + 32 * u, T - 1)];
#pragma unroll
            for (int u = 0; u < DS_U; u++) {
                const int j = j0 + 32 * u;
                if (j < T) ds_at(row, ds, e0, j, p[u], dot);
            }
        }
        zero_span(row, T, Tp);
    }
}

/* One of dkv_kernel's two products over the block's ROWS key rows from j0: dst += alpha W^T M
 * (dst's rows r < T - j0), summed over the rows i of W from i_lo: W (T, T) one head's dS, or
 * its att with keep given (then D = att keep s is wanted), M (T, HS) a head block of row
 * stride ldm; dst NULL: not wanted. Both kernels run the two as one pipeline, dk's chunks then
 * dv's, so that dv's first chunks come in during dk's last (cols_times). */
struct cols_prod {
    real *dst;
    int64_t ldd;
    real alpha;
    const real *W;
    const uint8_t *keep;
    const real *M;
    int ldm;
};

/* chunk c of the two products' pipeline (n0: the first's chunks): its product, and in *cc its
 * index among that product's chunks */
static __device__ __forceinline__ cols_prod prod_of(const cols_prod p[2], int n0, int c, int *cc)
{
    const bool second = c >= n0;
    *cc = second ? c - n0 : c;
    return second ? p[1] : p[0];
}

/* dkv_kernel's products for block (key tile, h, b): dk += scale dS^T Q, dv += D^T dO */
static __device__ __forceinline__ void dkv_products(cols_prod p[2], real *dk, real *dv,
                                                    const real *ds, const real *dout,
                                                    const real *att, const uint8_t *keep,
                                                    const real *q, const tt_attn_desc &a, int j0)
{
    const int64_t bhTT = head_index(a) * a.T * a.T;
    p[0] = {dk ? dk + head_at(a, a.ldk) + (int64_t)j0 * a.ldk : NULL, a.ldk, a.scale,
            dk ? ds + bhTT : NULL, NULL, q + head_at(a, a.ldq), a.ldq};
    p[1] = {dv ? dv + head_at(a, a.ldv) + (int64_t)j0 * a.ldv : NULL, a.ldv, R(1), att + bhTT,
            keep ? keep + bhTT : NULL, dout + head_at(a, a.ldo), a.ldo};
}

/* Sizes the kernels index with (int offsets inside a head, grid y and z). */
static inline void check_desc(const tt_attn_desc *a)
{
    const int D = a->NH * a->HS;
    TT_ASSERT_MSG(a->B >= 0 && a->T >= 1 && a->NH >= 1 && a->HS >= 1,
                  "attention: B %d, T %d, NH %d, HS %d", a->B, a->T, a->NH, a->HS);
    TT_ASSERT_MSG(a->B <= 65535 && a->NH <= 65535,
                  "attention: B %d or NH %d past the grid's "
                  "65535",
                  a->B, a->NH);
    TT_ASSERT_MSG(a->ldq >= D && a->ldk >= D && a->ldv >= D && a->ldo >= D,
                  "attention: row strides q %d, k %d, v %d, out %d below NH*HS = %d", a->ldq,
                  a->ldk, a->ldv, a->ldo, D);
}

/* a block per ROWS rows of one head: (row tile, h, b) */
static inline dim3 grid_of(const tt_attn_desc *a)
{
    return dim3((unsigned)((a->T + ROWS - 1) / ROWS), (unsigned)a->NH, (unsigned)a->B);
}

/* Dynamic shared memory past the default 48 KiB must be allowed per kernel: once, at the
 * largest size seen (a host-side attribute, nothing queued on the stream, so also safe while a
 * step is captured once the eager first step has set it). */
static inline void allow_smem(const void *kernel, size_t *allowed, size_t bytes, int T)
{
    if (bytes <= 48 * 1024 || bytes <= *allowed) return;
    int dev = 0, optin = 0;
    TT_CUDA_CHECK(cudaGetDevice(&dev));
    TT_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    TT_ASSERT_MSG(bytes <= (size_t)optin,
                  "attention: T = %d needs %zu bytes of shared memory per block, the GPU "
                  "allows %d. HINT: a shorter sequence length, or float32",
                  T, bytes, optin);
    TT_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    *allowed = bytes;
}

/* blocks of a kernel of `threads` threads with `bytes` of dynamic shared memory that one SM
 * holds at once (its registers, shared memory and threads allow), 0 where the runtime cannot
 * say (the emulated GPU); after a launch, whose allow_smem raised the kernel's limit to
 * `bytes` */
static inline int resident(const void *kernel, size_t bytes, int threads)
{
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, bytes) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky; nothing else to report */
        return 0;
    }
    return n;
}

/* tt_cuda_attention_residency's blocks[3] for one arithmetic's forward, dq and dkv kernels:
 * the first two launched with `rows` bytes of dynamic shared memory, dkv with `cols`, blocks
 * of `threads` (THREADS but in attention_mma.cu) */
static inline void residency_of(int blocks[3], const void *forward, const void *dq,
                                const void *dkv, size_t rows, size_t cols, int threads = THREADS)
{
    blocks[0] = resident(forward, rows, threads);
    blocks[1] = resident(dq, rows, threads);
    blocks[2] = resident(dkv, cols, threads);
}

/* The tensor-core kernels (attention_tc.cu, float32 builds): the slots' arguments, minus the
 * scratch checks done by the callers; passes 1 (TF32) or 3 (float32 split in two TF32 parts,
 * three products). */
void tt_cuda_attention_tc_forward(real *out, real *att, uint8_t *keep, const real *q, const real *k,
                                  const real *v, const int32_t *pad, const tt_attn_desc *a,
                                  tt_rng at, uint32_t thr, real s, int passes);
void tt_cuda_attention_tc_residency(const tt_attn_desc *a, int blocks[3], int passes);
void tt_cuda_attention_tc_backward(real *dq, real *dk, real *dv, real *ds, const real *dout,
                                   const real *att, const uint8_t *keep, const real *q,
                                   const real *k, const real *v, const tt_attn_desc *a, real s,
                                   int passes);

/* The register-tiled mma.sync kernels (attention_mma.cu, float32 builds; head sizes past 64 go
 * to the tensor-core kernels above with the same passes). */
void tt_cuda_attention_mma_forward(real *out, real *att, uint8_t *keep, const real *q,
                                   const real *k, const real *v, const int32_t *pad,
                                   const tt_attn_desc *a, tt_rng at, uint32_t thr, real s,
                                   int passes);
void tt_cuda_attention_mma_residency(const tt_attn_desc *a, int blocks[3], int passes);
void tt_cuda_attention_mma_backward(real *dq, real *dk, real *dv, real *ds, const real *dout,
                                    const real *att, const uint8_t *keep, const real *q,
                                    const real *k, const real *v, const tt_attn_desc *a, real s,
                                    int passes);

#endif
