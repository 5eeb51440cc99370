/* budget.h: the memory a run needs, worked out from the config and the corpus's sizes alone
 * (before anything is allocated), what the process may use, and the check between the two
 * that ./train and ./infer make before a run is set up (budget.c says what is counted).
 *
 * Status convention of src/train: 0, or -1 with err filled; only cli.c and infer.c turn -1
 * into exit status 2. */
#ifndef TT_BUDGET_H
#define TT_BUDGET_H

#include "tensor/backend.h"
#include "train/data/data.h"

/* The parts of a run's memory, in bytes; TT_MEM_STAGING is the largest of the host buffers
 * that live outside the steps (checkpoint copies, evaluation's and the maps' host copies,
 * the initial values), which are never alive at the same time. */
enum {
    TT_MEM_PARAMS, TT_MEM_GRADS, TT_MEM_MOMENTS, TT_MEM_ARENA, TT_MEM_HEAP, TT_MEM_TAPE,
    TT_MEM_BATCH, TT_MEM_STAGING, TT_MEM_RUNTIME, TT_MEM_DEVICE_RUNTIME, TT_MEM_BLAS,
    TT_MEM_STUDY, /* a scaling study's measurements (0 in a run's own need) */
    TT_MEM_PARTS
};

/* The address space OpenBLAS maps for each thread that calls a gemm at the same time as
 * another (the pool's threads): one buffer of 128 MiB (VmSize grows by 131072 kB at a thread's
 * first gemm, OpenBLAS 0.3.21 on x86-64). Mapped but barely touched, it counts against
 * RLIMIT_AS only (TT_MEM_BLAS); OpenBLAS retries a buffer it cannot map forever. */
#define TT_MEM_BLAS_BUFFER (128.0 * 1024 * 1024)

typedef struct tt_mem_need {
    double part[TT_MEM_PARTS];
    bool on_device[TT_MEM_PARTS]; /* in the device's own memory (cuda), else host memory */
    double host, device;          /* the sums; device 0 when the device has no memory of its own;
                                     host leaves out TT_MEM_BLAS */
    double address;               /* host's address space: host and TT_MEM_BLAS */
} tt_mem_need;

/* The memory of a run of config c on corpus d (only its sizes are read), on backend be
 * (its attention scratch and thread count); device_memory: be's memory is not the host's. */
void tt_mem_need_for(tt_mem_need *n, const tt_config *c, const tt_corpus *d,
                     const tt_backend *be, bool device_memory);

/* n's host, address and device from its parts and on_device (after a caller changed them). */
void tt_mem_need_sum(tt_mem_need *n);

/* What the process may still use of the host's memory, in bytes; each < 0 when unknown or
 * unlimited. */
typedef struct tt_mem_avail {
    double meminfo; /* MemAvailable of /proc/meminfo */
    double cgroup;  /* the tightest memory limit of the process's cgroup and its parents,
                       minus what each uses (v2: memory.max - memory.current; v1:
                       memory.limit_in_bytes - memory.usage_in_bytes) */
    double rlimit;  /* RLIMIT_AS minus the address space in use (VmSize of /proc/self/status) */
    double as_limit, vmsize; /* RLIMIT_AS itself and VmSize, in bytes */
    double host;    /* the smallest of those known; < 0 when none is */
} tt_mem_avail;

/* Reads ROOT/proc/meminfo, ROOT/proc/self/cgroup, ROOT/sys/fs/cgroup/... and
 * ROOT/proc/self/status (root "": the real ones; a test passes a fake tree) and getrlimit. */
void tt_mem_avail_read(tt_mem_avail *a, const char *root);

/* Before a run is set up: -1 with err ("memory: this run needs X (parts), the process may use
 * Y (sources); the sizes come from KEYS\nHINT: ...") when the host's part exceeds MemAvailable
 * or the cgroup's room, its address space exceeds RLIMIT_AS's room (the HINT then names the
 * `ulimit -v` it needs), or the device's part exceeds the device's free memory, else 0. The
 * environment variable TT_MEM_ROOT (tests only) replaces the root of /proc and /sys. */
int tt_run_check_memory(const tt_config *c, const tt_corpus *d, char *err, size_t errlen);

/* The same check of a need worked out by the caller (the scaling study's, whose keys are the
 * study's: `keys` names them, `hint` says what to lower). */
int tt_mem_check(const tt_mem_need *n, const tt_config *c, const tt_corpus *d,
                 const tt_backend *be, const char *keys, const char *hint, char *err,
                 size_t errlen);

/* Under a finite RLIMIT_AS, OpenBLAS maps a buffer per thread of its own when it is loaded
 * (before main) and hangs on one it cannot map (tt_cpu_set_threads then waits for that thread
 * forever): the program runs itself again with OPENBLAS_NUM_THREADS=1 (tt_blas_env, which
 * calls this). A user's OPENBLAS_NUM_THREADS is replaced too: OpenBLAS runs one thread of its
 * own in any case (the pool threads the gemms). True when it set the variable. */
bool tt_mem_env_for_rlimit(void);

/* bytes as "12.3 MB" (powers of 1000) into buf */
const char *tt_mem_text(double bytes, char *buf, size_t len);

#endif
