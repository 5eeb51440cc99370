/* comm.h: the device's part of a data-parallel run's gradient sum (train/run/dist.c owns the
 * processes and MPI): in a CUDA build, which GPU a rank takes, and the NCCL communicator over
 * the ranks (tensor/comm.c), so that nothing above src/tensor includes a CUDA or NCCL
 * header. Declared for every build, defined only in CUDA ones: callers use them under
 * TT_WITH_CUDA (and TT_WITH_NCCL for the communicator). Failures return -1 with the call and
 * NCCL's message in err. */
#ifndef TT_COMM_H
#define TT_COMM_H

#include "tensor/common.h"
#include "tensor/real.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The size of a communicator's id (NCCL_UNIQUE_ID_BYTES), which rank 0 makes and sends. */
enum { TT_COMM_ID_BYTES = 128 };

/* This process's GPU: local_rank (its place among its machine's ranks) modulo the GPUs there;
 * nothing when there is none. */
void tt_comm_pick_gpu(int local_rank);
/* A new communicator id (rank 0). */
int tt_comm_id(unsigned char id[TT_COMM_ID_BYTES], char *err, size_t errlen);
/* This rank's end of the communicator of `size` ranks with that id (every rank, at once). */
int tt_comm_start(const unsigned char id[TT_COMM_ID_BYTES], int size, int rank, char *err,
                  size_t errlen);
/* buf (n reals, device memory) summed over the ranks in place, queued on the backend's stream. */
int tt_comm_sum(real *buf, int64_t n, char *err, size_t errlen);
/* The communicator freed, if one was started. */
void tt_comm_stop(void);

#ifdef __cplusplus
}
#endif

#endif
