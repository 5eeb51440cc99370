/* dist.c: the ranks of a data-parallel run (dist.h). MPI calls only under TT_WITH_MPI; NCCL
 * only in a CUDA build that found it (TT_WITH_NCCL). Every collective here is called by every
 * rank at the same point of the program (the loop's structure guarantees it: same config, same
 * data, same shuffle, same number of steps on every rank), so none can wait for a rank that
 * never comes, and a rank that dies ends the job: mpirun stops the others when a process exits
 * abnormally. */
#include "train/run/dist.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TT_WITH_MPI
#include <mpi.h>
#endif
#if defined(TT_WITH_CUDA) && defined(TT_WITH_NCCL)
#define TT_NCCL_ON 1 /* a CUDA build that found NCCL (Makefile) */
#endif
#ifdef TT_WITH_CUDA
#include "tensor/comm.h" /* the GPU's side: the device choice, NCCL (tensor/comm.c) */
#endif

int tt_dist_check_device(tt_device d, char *err, size_t errlen)
{
    const int n = tt_dist_size();
    if (n == 1 || d == TT_CPU || (d == TT_CUDA && tt_dist_nccl(true))) return 0;
    if (d == TT_CUDA)
        return tt_errorf(err, errlen, "device \"cuda\" over %d processes needs NCCL to sum the "
                         "GPUs' gradients, and this build was made without it (no nccl.h and "
                         "libnccl.so under NCCL_HOME, the CUDA Toolkit's folder by default)\n"
                         "HINT: NCCL_HOME=/path/to/nccl make MPI=1 CUDA=1", n);
    return tt_errorf(err, errlen, "device \"%s\" cannot train over %d processes: data parallel "
                     "sums the gradients of \"cpu\" (MPI) or \"cuda\" (NCCL)",
                     tt_device_name(d), n);
}

uint64_t tt_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static int g_rank = 0, g_size = 1;

#ifdef TT_NCCL_ON
/* NCCL, for gradients in GPU memory: one communicator over all ranks (or over this process
 * alone: TT_NCCL=1 in a CUDA build without MPI, the check that the NCCL path gives the plain
 * run's bits), made at the first gradient sum, when every rank reaches its first step. */
static bool g_nccl_on;

/* A failed NCCL call ends every rank (its message first). */
static void nccl_check(int rc, const char *err)
{
    if (!rc) return;
    fprintf(stderr, "train: rank %d: %s\n", g_rank, err);
    tt_dist_abort(1);
}

static bool nccl_forced(void)
{
    const char *e = getenv("TT_NCCL");
    return e && !strcmp(e, "1");
}

static void nccl_start(void)
{
    unsigned char id[TT_COMM_ID_BYTES];
    char err[256];
    if (g_rank == 0) nccl_check(tt_comm_id(id, err, sizeof err), err);
#ifdef TT_WITH_MPI
    if (g_size > 1) MPI_Bcast(id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
#endif
    nccl_check(tt_comm_start(id, g_size, g_rank, err, sizeof err), err);
    g_nccl_on = true;
}

/* The gradients summed by NCCL on the backend's stream; false when NCCL is not in use. */
static bool nccl_sum(tt_params *ps)
{
    if (!tt_dist_nccl(ps->device == TT_CUDA)) return false;
    if (!g_nccl_on) nccl_start();
    char err[256];
    nccl_check(tt_comm_sum(ps->grad, ps->numel, err, sizeof err), err);
    return true;
}

static void nccl_stop(void)
{
    if (g_nccl_on) tt_comm_stop();
    g_nccl_on = false;
}
#else
static bool nccl_sum(tt_params *ps) { return (void)ps, false; }
static void nccl_stop(void) {}
#endif

/* MPI is initialised only by tt_dist_init (./train's main): the test runners, which call
 * tt_train_main in process, stay a world of one without MPI_Init. Every function below is
 * the one-process case when the world has one rank or the build has no MPI. */
static bool started(void)
{
    int on = 0;
#ifdef TT_WITH_MPI
    MPI_Initialized(&on);
#endif
    return on;
}

void tt_dist_init(int *argc, char ***argv)
{
#ifdef TT_WITH_MPI
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
#ifdef TT_WITH_CUDA
    /* one GPU per rank: the rank's place among its machine's ranks, modulo the GPUs there */
    MPI_Comm local;
    int local_rank = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);
    tt_comm_pick_gpu(local_rank);
#endif
    if (g_rank > 0 && !freopen("/dev/null", "w", stdout))
        fprintf(stderr, "train: rank %d: cannot silence stdout\n", g_rank);
#else
    (void)argc, (void)argv;
#endif
}

void tt_dist_finalize(void)
{
    nccl_stop();
#ifdef TT_WITH_MPI
    if (started()) MPI_Finalize();
#endif
}

#ifdef TT_WITH_MPI
bool tt_dist_built(void) { return true; }
#else
bool tt_dist_built(void) { return false; }
#endif
int tt_dist_rank(void) { return g_rank; }
int tt_dist_size(void) { return g_size; }

bool tt_dist_nccl(bool cuda)
{
#ifdef TT_NCCL_ON
    return cuda && (started() || nccl_forced());
#else
    return (void)cuda, false;
#endif
}

void tt_dist_sum(double *v, int n)
{
    if (g_size == 1) return;
#ifdef TT_WITH_MPI
    MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
#else
    (void)v, (void)n;
#endif
}

void tt_dist_sum_grads(tt_params *ps)
{
    if (nccl_sum(ps) || g_size == 1) return;
    TT_ASSERT_MSG(ps->device == TT_CPU, "data parallel on %s: only cpu (MPI) and cuda (NCCL) "
                  "gradients can be summed", tt_device_name(ps->device));
#ifdef TT_WITH_MPI
    /* CPU memory is host memory: the flat buffer goes to MPI as it is, one call */
    for (int64_t done = 0; done < ps->numel;) { /* MPI counts are int */
        int n = ps->numel - done > (1 << 30) ? 1 << 30 : (int)(ps->numel - done);
        MPI_Allreduce(MPI_IN_PLACE, ps->grad + done, n, sizeof(real) == 8 ? MPI_DOUBLE : MPI_FLOAT,
                      MPI_SUM, MPI_COMM_WORLD);
        done += n;
    }
#endif
}

void tt_dist_gather(const void *mine, size_t bytes, void *all)
{
    if (g_size == 1) {
        memcpy(all, mine, bytes);
        return;
    }
#ifdef TT_WITH_MPI
    TT_ASSERT_MSG(bytes <= INT_MAX, "tt_dist_gather: %zu bytes per rank (MPI counts are int)",
                  bytes);
    MPI_Gather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
#endif
}

bool tt_dist_any(bool flag)
{
    int any = flag;
#ifdef TT_WITH_MPI
    int f = flag;
    if (g_size > 1) MPI_Allreduce(&f, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
#endif
    return any != 0;
}

int tt_dist_max(int value)
{
    int max = value;
#ifdef TT_WITH_MPI
    if (g_size > 1) MPI_Allreduce(&value, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
#endif
    return max;
}

void tt_dist_barrier(void)
{
#ifdef TT_WITH_MPI
    if (g_size > 1) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

int tt_dist_agree(bool failed, const char *err)
{
    int first = failed ? g_rank : g_size, lowest = first;
#ifdef TT_WITH_MPI
    if (g_size > 1) MPI_Allreduce(&first, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
#endif
    if (lowest == g_size) return 0;
    if (g_rank == lowest) {
        if (g_rank > 0) fprintf(stderr, "train: rank %d: ", g_rank);
        else fputs("train: ", stderr);
        tt_term_puts(stderr, err, "\n"); /* it may quote a path, a word of a data file */
        fputc('\n', stderr);
    }
    return -1;
}

int tt_dist_same(uint64_t value, char *err, size_t errlen)
{
    if (g_size == 1) return 0;
    int lowest = g_size;
#ifdef TT_WITH_MPI
    uint64_t first = value;
    MPI_Bcast(&first, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    int differs = value != first ? g_rank : g_size;
    MPI_Allreduce(&differs, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
#else
    (void)value;
#endif
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
    if (started() && g_size > 1) {
#ifdef TT_WITH_MPI
        MPI_Abort(MPI_COMM_WORLD, code);
#endif
    }
    exit(code);
}
