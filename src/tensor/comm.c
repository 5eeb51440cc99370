/* comm.c: tensor/comm.h in a CUDA build (TT_WITH_CUDA): the rank's GPU, and NCCL's all-reduce
 * of the gradients in GPU memory on the backend's stream where the build found NCCL
 * (TT_WITH_NCCL; not on the emulated GPU). Other builds compile nothing here: their callers
 * never call these. C, not CUDA C++: NCCL's API is C, and this way the file gets the C build's
 * flags (-DTT_WITH_NCCL and NCCL's include folder among them). */
#include "tensor/comm.h"

#ifdef TT_WITH_CUDA
#include "tensor/cuda/cuda.h"

#include <cuda_runtime_api.h>
#include <string.h>

void tt_comm_pick_gpu(int local_rank)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) cudaSetDevice(local_rank % n);
}

#ifdef TT_WITH_NCCL
/* nccl.h declares a few functions with () for (void) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

_Static_assert(sizeof(ncclUniqueId) == TT_COMM_ID_BYTES, "tensor/comm.h: NCCL's id size");

static ncclComm_t g_comm;
static bool g_on;

static int nccl_error(const char *call, ncclResult_t rc, char *err, size_t errlen)
{
    return tt_errorf(err, errlen, "%s failed: %s", call, ncclGetErrorString(rc));
}

int tt_comm_id(unsigned char id[TT_COMM_ID_BYTES], char *err, size_t errlen)
{
    ncclUniqueId u;
    ncclResult_t rc = ncclGetUniqueId(&u);
    if (rc != ncclSuccess) return nccl_error("ncclGetUniqueId", rc, err, errlen);
    memcpy(id, &u, sizeof u);
    return 0;
}

int tt_comm_start(const unsigned char id[TT_COMM_ID_BYTES], int size, int rank, char *err,
                  size_t errlen)
{
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    ncclResult_t rc = ncclCommInitRank(&g_comm, size, u, rank);
    if (rc != ncclSuccess) return nccl_error("ncclCommInitRank", rc, err, errlen);
    g_on = true;
    return 0;
}

int tt_comm_sum(real *buf, int64_t n, char *err, size_t errlen)
{
    ncclResult_t rc = ncclAllReduce(buf, buf, (size_t)n,
                                    sizeof(real) == 8 ? ncclFloat64 : ncclFloat32, ncclSum,
                                    g_comm, (cudaStream_t)tt_cuda_stream());
    return rc == ncclSuccess ? 0 : nccl_error("ncclAllReduce", rc, err, errlen);
}

void tt_comm_stop(void)
{
    if (g_on) ncclCommDestroy(g_comm);
    g_on = false;
}
#endif
#else
typedef int tt_comm_unused; /* ISO C wants a declaration in every file */
#endif
