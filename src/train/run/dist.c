/* dist.c: the ranks of a data-parallel run (dist.h). MPI calls only under TT_WITH_MPI; NCCL
 * only under TT_WITH_MPI and TT_WITH_CUDA. Every collective here is called by every rank at the
 * same point of the program (the loop's structure guarantees it: same config, same data, same
 * shuffle, same number of steps on every rank), so none can wait for a rank that never comes,
 * and a rank that dies ends the job: mpirun stops the others when a process exits abnormally. */
#include "train/run/dist.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TT_WITH_MPI
#include <mpi.h>
#ifdef TT_WITH_CUDA
#include "tensor/cuda/cuda.h"
#include <cuda_runtime_api.h>
/* nccl.h declares a few functions with () for (void) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#endif
#endif

uint64_t tt_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

#ifndef TT_WITH_MPI

void tt_dist_init(int *argc, char ***argv) { (void)argc, (void)argv; }
void tt_dist_finalize(void) {}
bool tt_dist_built(void) { return false; }
int tt_dist_rank(void) { return 0; }
int tt_dist_size(void) { return 1; }
void tt_dist_sum(double *v, int n) { (void)v, (void)n; }
void tt_dist_sum_grads(tt_params *ps) { (void)ps; }
bool tt_dist_nccl(bool cuda) { return (void)cuda, false; }
bool tt_dist_any(bool flag) { return flag; }
void tt_dist_gather(const void *mine, size_t bytes, void *all) { memcpy(all, mine, bytes); }
void tt_dist_abort(int code) { exit(code); }

int tt_dist_same(uint64_t value, char *err, size_t errlen)
{
    (void)value, (void)err, (void)errlen;
    return 0;
}

int tt_dist_agree(bool failed, const char *err)
{
    if (failed) fprintf(stderr, "train: %s\n", err);
    return failed ? -1 : 0;
}

#else

static int g_rank = 0, g_size = 1;

/* MPI is initialised only by tt_dist_init (./train's main): the test runners, which call
 * tt_train_main in process, stay a world of one without MPI_Init. */
static bool started(void)
{
    int on = 0;
    MPI_Initialized(&on);
    return on;
}

#ifdef TT_WITH_CUDA
static ncclComm_t g_nccl;
static bool g_nccl_on;
static int g_local_rank;

#define TT_NCCL_CHECK(call)                                                                    \
    do {                                                                                       \
        ncclResult_t tt_nccl_rc_ = (call);                                                     \
        if (tt_nccl_rc_ != ncclSuccess) {                                                      \
            fprintf(stderr, "train: rank %d: %s failed: %s (%s:%d)\n", g_rank, #call,          \
                    ncclGetErrorString(tt_nccl_rc_), __FILE__, __LINE__);                      \
            tt_dist_abort(1);                                                                  \
        }                                                                                      \
    } while (0)

/* One communicator over all ranks, made at the first gradient sum (a collective: every rank
 * reaches its first step): rank 0's unique id broadcast over MPI. */
static void nccl_start(void)
{
    ncclUniqueId id;
    if (g_rank == 0) TT_NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    TT_NCCL_CHECK(ncclCommInitRank(&g_nccl, g_size, id, g_rank));
    g_nccl_on = true;
}
#endif

void tt_dist_init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
#ifdef TT_WITH_CUDA
    /* one GPU per rank: the rank's place among its machine's ranks, modulo the GPUs there */
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &g_local_rank);
    MPI_Comm_free(&local);
    int n = 0;
    if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) cudaSetDevice(g_local_rank % n);
#endif
    if (g_rank > 0 && !freopen("/dev/null", "w", stdout))
        fprintf(stderr, "train: rank %d: cannot silence stdout\n", g_rank);
}

void tt_dist_finalize(void)
{
    if (!started()) return;
#ifdef TT_WITH_CUDA
    if (g_nccl_on) ncclCommDestroy(g_nccl);
    g_nccl_on = false;
#endif
    MPI_Finalize();
}

bool tt_dist_built(void) { return true; }
int tt_dist_rank(void) { return g_rank; }
int tt_dist_size(void) { return g_size; }

void tt_dist_sum(double *v, int n)
{
    if (g_size > 1) MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

bool tt_dist_nccl(bool cuda)
{
#ifdef TT_WITH_CUDA
    return cuda && started();
#else
    return (void)cuda, false;
#endif
}

void tt_dist_sum_grads(tt_params *ps)
{
#ifdef TT_WITH_CUDA
    if (tt_dist_nccl(ps->device == TT_CUDA)) {
        if (!g_nccl_on) nccl_start();
        TT_NCCL_CHECK(ncclAllReduce(ps->grad, ps->grad, (size_t)ps->numel,
                                    sizeof(real) == 8 ? ncclFloat64 : ncclFloat32, ncclSum,
                                    g_nccl, (cudaStream_t)tt_cuda_stream()));
        return;
    }
#endif
    if (g_size == 1) return;
    TT_ASSERT_MSG(ps->device == TT_CPU, "data parallel on %s: only cpu (MPI) and cuda (NCCL) "
                  "gradients can be summed", tt_device_name(ps->device));
    /* CPU memory is host memory: the flat buffer goes to MPI as it is, one call */
    for (int64_t done = 0; done < ps->numel;) { /* MPI counts are int */
        int n = ps->numel - done > (1 << 30) ? 1 << 30 : (int)(ps->numel - done);
        MPI_Allreduce(MPI_IN_PLACE, ps->grad + done, n, sizeof(real) == 8 ? MPI_DOUBLE : MPI_FLOAT,
                      MPI_SUM, MPI_COMM_WORLD);
        done += n;
    }
}

void tt_dist_gather(const void *mine, size_t bytes, void *all)
{
    if (g_size == 1) {
        memcpy(all, mine, bytes);
        return;
    }
    TT_ASSERT_MSG(bytes <= INT_MAX, "tt_dist_gather: %zu bytes per rank (MPI counts are int)",
                  bytes);
    MPI_Gather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

bool tt_dist_any(bool flag)
{
    if (g_size == 1) return flag;
    int f = flag, any = 0;
    MPI_Allreduce(&f, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any != 0;
}

int tt_dist_agree(bool failed, const char *err)
{
    int first = failed ? g_rank : g_size, lowest = first;
    if (g_size > 1) MPI_Allreduce(&first, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (lowest == g_size) return 0;
    if (g_rank == lowest) {
        if (g_rank > 0) fprintf(stderr, "train: rank %d: %s\n", g_rank, err);
        else fprintf(stderr, "train: %s\n", err);
    }
    return -1;
}

int tt_dist_same(uint64_t value, char *err, size_t errlen)
{
    if (g_size == 1) return 0;
    uint64_t first = value;
    MPI_Bcast(&first, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    int differs = value != first ? g_rank : g_size, lowest = g_size;
    MPI_Allreduce(&differs, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (lowest == g_size) return 0;
    return tt_errorf(err, errlen, "rank %d was given a different config or data from rank 0's "
                     "(their hashes of the resolved config and the data's sizes differ); "
                     "every rank must run the same CONFIG with the same --set options and "
                     "files.\nHINT: on several machines, the same paths must hold the same "
                     "files", lowest);
}

void tt_dist_abort(int code)
{
    fflush(stdout);
    fflush(stderr);
    if (started() && g_size > 1) MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

#endif
