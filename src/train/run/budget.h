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
    TT_MEM_BATCH, TT_MEM_STAGING, TT_MEM_RUNTIME, TT_MEM_DEVICE_RUNTIME, TT_MEM_PARTS
};

typedef struct tt_mem_need {
    double part[TT_MEM_PARTS];
    bool on_device[TT_MEM_PARTS]; /* in the device's own memory (cuda), else host memory */
    double host, device;          /* the sums; device 0 when the device has no memory of its own */
} tt_mem_need;

/* The memory of a run of config c on corpus d (only its sizes are read), on backend be
 * (its attention scratch and thread count); device_memory: be's memory is not the host's. */
void tt_mem_need_for(tt_mem_need *n, const tt_config *c, const tt_corpus *d,
                     const tt_backend *be, bool device_memory);

/* What the process may still use of the host's memory, in bytes; each < 0 when unknown or
 * unlimited. */
typedef struct tt_mem_avail {
    double meminfo; /* MemAvailable of /proc/meminfo */
    double cgroup;  /* the tightest memory limit of the process's cgroup and its parents,
                       minus what each uses (v2: memory.max - memory.current; v1:
                       memory.limit_in_bytes - memory.usage_in_bytes) */
    double rlimit;  /* RLIMIT_AS minus the address space in use (VmSize of /proc/self/status) */
    double host;    /* the smallest of those known; < 0 when none is */
} tt_mem_avail;

/* Reads ROOT/proc/meminfo, ROOT/proc/self/cgroup, ROOT/sys/fs/cgroup/... and
 * ROOT/proc/self/status (root "": the real ones; a test passes a fake tree) and getrlimit. */
void tt_mem_avail_read(tt_mem_avail *a, const char *root);

/* Before a run is set up: -1 with err ("memory: this run needs X (parts), the process may use
 * Y (sources); the sizes come from KEYS\nHINT: ...") when the host's part exceeds a.host or
 * the device's part exceeds the device's free memory, else 0. The environment variable
 * TT_MEM_ROOT (tests only) replaces the root of /proc and /sys. */
int tt_run_check_memory(const tt_config *c, const tt_corpus *d, char *err, size_t errlen);

/* bytes as "12.3 MB" (powers of 1000) into buf */
const char *tt_mem_text(double bytes, char *buf, size_t len);

#endif
