/* dist.h: data-parallel training over processes (make MPI=1; `mpirun -np N ./train CONFIG`).
 * Every rank holds the whole model and takes share `rank` of every batch (train.batch_size / N
 * rows: tt_batch.part, tt_graph.part); after the backward the flat gradient buffer is summed
 * over the ranks in one call (MPI_Allreduce in place on the CPU, ncclAllReduce on CUDA), so
 * clipping and the optimizer then run identically everywhere. Rank 0 writes every output; the
 * others' stdout goes to /dev/null.
 *
 * Without MPI=1 (TT_WITH_MPI undefined) every function here is the one-process case: rank 0 of
 * 1, sums that change nothing, and the program is the plain one. In an MPI build started
 * without mpirun, MPI makes a world of one process: the same. */
#ifndef TT_DIST_H
#define TT_DIST_H

#include "autograd/params.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* main() of ./train: MPI_Init (MPI builds), the GPU of this rank on a machine with several
 * (the rank's place among the ranks of its machine, modulo the GPUs), rank > 0's stdout to
 * /dev/null. tt_dist_finalize: MPI_Finalize. Both nothing without MPI. */
void tt_dist_init(int *argc, char ***argv);
void tt_dist_finalize(void);

bool tt_dist_built(void); /* built with MPI=1 */
int tt_dist_rank(void);   /* 0 without MPI */
int tt_dist_size(void);   /* 1 without MPI */

/* v[0..n) summed over the ranks, in place, on the host (every rank gets the sums). */
void tt_dist_sum(double *v, int n);
/* The gradients of ps (ps->grad, ps->numel elements, on ps->device) summed over the ranks in
 * place: MPI_Allreduce on CPU memory, ncclAllReduce on the backend's stream for CUDA. On one CPU
 * process nothing happens; an MPI CUDA build uses its NCCL communicator even for one rank, so
 * that the path is exercised (the sum over one rank is a copy: the same bits); so does a plain
 * CUDA build with TT_NCCL=1 (tt_dist_nccl). */
void tt_dist_sum_grads(tt_params *ps);
/* Whether the NCCL path of tt_dist_sum_grads is used for device memory of `cuda`: an MPI CUDA
 * build, or any CUDA build with TT_NCCL=1 in the environment (a communicator of this process
 * alone: the check that the NCCL path gives the plain run's bits, without MPI). */
bool tt_dist_nccl(bool cuda);

/* 0, or -1 with err when this build cannot sum the gradients of device d over the ranks
 * (cuda without NCCL; the guard device). */
int tt_dist_check_device(tt_device d, char *err, size_t errlen);

/* The ranks agree on a status after a phase in which each may fail alone (loading config and
 * data, preparing the run folder): returns 0 when every rank succeeded, else -1 on every rank,
 * and only the first rank that failed prints its err ("train: rank K: ..." for K > 0). With
 * one process: prints err when `failed`, returns -1 then. */
int tt_dist_agree(bool failed, const char *err);
/* Whether every rank passed the same value (a hash of its resolved config and data sizes):
 * 0, or -1 with err naming the first rank whose value differs from rank 0's. */
int tt_dist_same(uint64_t value, char *err, size_t errlen);
/* Rank 0 gets every rank's `bytes` bytes at `mine`, in rank order, in `all` (bytes * size;
 * unused elsewhere, may be NULL there): the shares of a batch put back together. */
void tt_dist_gather(const void *mine, size_t bytes, void *all);
/* Any rank's flag set (a collective: every rank must call it at the same point). */
bool tt_dist_any(bool flag);
/* The largest of the ranks' values (a collective, as tt_dist_any). */
int tt_dist_max(int value);
/* Returns when every rank has called it: before the ranks exit, so that none ends while
 * another still writes (mpirun ends the job when a process exits with a status other than 0). */
void tt_dist_barrier(void);
/* Stops every rank now with exit status `code` (MPI_Abort); exit(code) without MPI. For an
 * error one rank met alone while the others may wait in a collective: never a hang. */
TT_NORETURN void tt_dist_abort(int code);

/* FNV-1a over n bytes, continuing from h (start with TT_FNV_OFFSET). */
#define TT_FNV_OFFSET 14695981039346656037ull
uint64_t tt_fnv1a(uint64_t h, const void *p, size_t n);

#endif
