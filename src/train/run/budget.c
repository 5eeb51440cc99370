/* budget.c: the memory check before a run (budget.h). What is counted, from the config and the
 * corpus's sizes, in double (a d_model of 65536 overflows nothing): the parameters (and the
 * sinusoidal table), their gradients, the optimizer's two buffers (both optimizers keep two),
 * the step arena, gradient heap and tape of tt_step_sizes_for, the batch, order and pooling
 * buffers, the largest host staging buffer, an allowance for the runtime (thread stacks, what
 * OpenBLAS touches) and the address space of OpenBLAS's buffers. With a device of its own
 * memory (cuda) the first five live there, the rest on the host. What is compared: the host's
 * part with the lesser of MemAvailable and the cgroup limit, the host's address space (with
 * the OpenBLAS buffers) with RLIMIT_AS, the device's part with the device's free memory. */
#define _POSIX_C_SOURCE 200809L /* getline, setenv */

#include "train/run/budget.h"

#include "train/run/run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* 64 MiB, and 16 MiB more per thread: what OpenBLAS touches of its buffers and the threads'
 * stacks (8 MiB of address space each), measured well below this on the toy configs; a stated
 * allowance, not a measurement. */
#define RUNTIME_BASE (64.0 * 1024 * 1024)
#define RUNTIME_PER_THREAD (16.0 * 1024 * 1024)
/* A device of its own memory: cuBLAS's workspaces (32 MiB for each of the two streams,
 * cuda/backend.cu), the captured step's graph and what the kernels load; a stated allowance
 * too. */
#define DEVICE_RUNTIME (96.0 * 1024 * 1024)

/* The keys a part grows with, for the message. */
enum { K_D = 1, K_F = 2, K_L = 4, K_H = 8, K_T = 16, K_B = 32, K_V = 64, K_MAX = 128, K_THR = 256 };

static const char *const PART_NAMES[TT_MEM_PARTS] = {
    "parameters", "gradients", "optimizer moments", "step arena", "gradient heap", "tape",
    "batches", "host staging", "runtime allowance", "device runtime allowance",
    "OpenBLAS buffers", "study measurements"};

/* Which parts a check counts: the host's memory, its address space, the device's. */
enum { HOST, ADDRESS, DEVICE };

static bool counted(const tt_mem_need *n, int k, int kind)
{
    if (kind == DEVICE) return n->on_device[k];
    return !n->on_device[k] && (kind == ADDRESS || k != TT_MEM_BLAS);
}

const char *tt_mem_text(double bytes, char *buf, size_t len)
{
    static const char *const units[] = {"bytes", "kB", "MB", "GB", "TB", "PB"};
    int u = 0;
    while (bytes >= 1000 && u < 5) bytes /= 1000, u++;
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
    return buf;
}

/* A parameter's reals in the table: each starts on a 16-element boundary (params.c). */
static double pad16(double n) { return ceil(n / 16) * 16; }

/* The reals of the parameter table (model.c's modules, PyTorch's layout). */
static double param_count(const tt_config *c, const tt_corpus *d)
{
    double D = c->model.d_model, F = c->model.d_ff, V = d->words.n, O = tt_corpus_n_out(d);
    double layer = pad16(3 * D * D) + pad16(3 * D) + pad16(D * D) + pad16(D) + pad16(F * D) +
                   pad16(F) + pad16(D * F) + 5 * pad16(D); /* linear2's bias, two norms */
    return pad16(V * D) + (c->model.learned_pos ? pad16((double)c->model.max_len * D) : 0) +
           c->model.n_layers * layer + (c->model.pre_norm ? 2 * pad16(D) : 0) + pad16(O * D) +
           pad16(O);
}

void tt_mem_need_for(tt_mem_need *n, const tt_config *c, const tt_corpus *d,
                     const tt_backend *be, bool device_memory)
{
    const double R = sizeof(real), P = param_count(c, d);
    const int B = c->train.batch_size, T = c->data.seq_len, H = c->model.n_heads;
    const double O = tt_corpus_n_out(d), N = (double)B * T;
    tt_step_sizes sz = tt_step_sizes_for(be, B, T, c->model.d_model, c->model.d_ff, H,
                                         c->model.n_layers, (int)O, c->model.gelu);
    *n = (tt_mem_need){0};
    double table = c->model.learned_pos ? 0 : (double)c->model.max_len * c->model.d_model;
    n->part[TT_MEM_PARAMS] = R * (P + table);
    n->part[TT_MEM_GRADS] = R * P;
    n->part[TT_MEM_MOMENTS] = 2 * R * P;
    n->part[TT_MEM_ARENA] = (double)sz.values;
    n->part[TT_MEM_HEAP] = (double)sz.grads;
    n->part[TT_MEM_TAPE] = (double)sz.tape;
    n->part[TT_MEM_BATCH] = 13 * N + R * N + 4.0 * d->train.n; /* tt_batch, pool, order */
    /* checkpoint copies (values and both moments), evaluation's logits and one layer's
     * weights, the initial values: one at a time */
    double eval = R * (N * O + (double)B * H * T * T);
    n->part[TT_MEM_STAGING] = fmax(3 * R * P, eval);
    n->part[TT_MEM_RUNTIME] = RUNTIME_BASE + RUNTIME_PER_THREAD * be->get_threads();
    n->part[TT_MEM_DEVICE_RUNTIME] = device_memory ? DEVICE_RUNTIME : 0;
    n->part[TT_MEM_BLAS] = TT_MEM_BLAS_BUFFER * be->get_threads();
    for (int k = 0; k < TT_MEM_PARTS; k++)
        n->on_device[k] = device_memory && (k <= TT_MEM_HEAP || k == TT_MEM_DEVICE_RUNTIME);
    tt_mem_need_sum(n);
}

void tt_mem_need_sum(tt_mem_need *n)
{
    n->host = n->address = n->device = 0;
    for (int k = 0; k < TT_MEM_PARTS; k++) {
        if (counted(n, k, HOST)) n->host += n->part[k];
        if (counted(n, k, ADDRESS)) n->address += n->part[k];
        if (counted(n, k, DEVICE)) n->device += n->part[k];
    }
}

/* The first number of ROOT/PATH (a file of /proc or /sys), or -1: "max" and missing files are
 * -1. With `field`, the number after that field name ("MemAvailable:"), times 1024 (kB). */
static double read_number(const char *root, const char *path, const char *field)
{
    char full[4096], *line = NULL;
    size_t cap = 0;
    snprintf(full, sizeof full, "%s%s", root, path);
    FILE *f = fopen(full, "r");
    double v = -1;
    while (f && getline(&line, &cap, f) > 0) {
        size_t skip = field ? strlen(field) : 0;
        if (field && strncmp(line, field, skip)) continue;
        char *end;
        double x = strtod(line + skip, &end);
        if (end != line + skip && x >= 0) v = field ? x * 1024 : x;
        break;
    }
    free(line);
    if (f) fclose(f);
    return v;
}

/* The least room left under the limits of cgroup folder dir (under ROOT/sys/fs/cgroup) and its
 * parents: v2 memory.max - memory.current, v1 memory.limit_in_bytes - memory.usage_in_bytes
 * (v1 writes "no limit" as a number near 2^63). -1 when none has a limit. */
static double cgroup_room(const char *root, char *dir, bool v2)
{
    double best = -1;
    char path[2200];
    const char *limit_file = v2 ? "memory.max" : "memory.limit_in_bytes";
    const char *used_file = v2 ? "memory.current" : "memory.usage_in_bytes";
    for (;;) {
        snprintf(path, sizeof path, "%s/%s", dir, limit_file);
        double limit = read_number(root, path, NULL);
        snprintf(path, sizeof path, "%s/%s", dir, used_file);
        double used = read_number(root, path, NULL);
        if (limit >= 0 && limit < 0x1p60) {
            double room = fmax(0, limit - fmax(used, 0));
            best = best < 0 ? room : fmin(best, room);
        }
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir + strlen(v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory"))
            break;
        *slash = '\0';
    }
    return best;
}

/* The process's cgroup from ROOT/proc/self/cgroup: "0::/path" (v2) or "N:...memory...:/path"
 * (v1); a v1 path that the container does not show falls back to the mount's root. */
static double cgroup_avail(const char *root)
{
    char full[4096], dir[2048], *line = NULL;
    size_t cap = 0;
    double room = -1;
    snprintf(full, sizeof full, "%s/proc/self/cgroup", root);
    FILE *f = fopen(full, "r");
    while (f && room < 0 && getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c2 = '\0';
        bool v2 = !strcmp(c1 + 1, ""), v1 = strstr(c1 + 1, "memory") != NULL;
        if (!v2 && !v1) continue;
        const char *base = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
        snprintf(dir, sizeof dir, "%s%s", base, strcmp(c2 + 1, "/") ? c2 + 1 : "");
        room = cgroup_room(root, dir, v2);
        if (room < 0 && v1) {
            snprintf(dir, sizeof dir, "%s", base);
            room = cgroup_room(root, dir, false);
        }
    }
    free(line);
    if (f) fclose(f);
    return room;
}

void tt_mem_avail_read(tt_mem_avail *a, const char *root)
{
    *a = (tt_mem_avail){.meminfo = read_number(root, "/proc/meminfo", "MemAvailable:"),
                        .cgroup = cgroup_avail(root), .rlimit = -1, .as_limit = -1,
                        .vmsize = read_number(root, "/proc/self/status", "VmSize:")};
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        a->as_limit = (double)rl.rlim_cur;
        a->rlimit = fmax(0, (double)rl.rlim_cur - fmax(a->vmsize, 0));
    }
    a->host = -1;
    const double known[3] = {a->meminfo, a->cgroup, a->rlimit};
    for (int k = 0; k < 3; k++)
        if (known[k] >= 0) a->host = a->host < 0 ? known[k] : fmin(a->host, known[k]);
}

/* The keys part k grows with. */
static int part_keys(const tt_mem_need *n, int k, const tt_config *c, double P)
{
    int model = K_D | K_F | K_L | K_V;
    if ((double)c->model.max_len * c->model.d_model > 0.1 * P) model |= K_MAX;
    switch (k) {
    case TT_MEM_ARENA: return K_B | K_T | K_D | K_F | K_L | K_H;
    case TT_MEM_HEAP: return K_B | K_T | K_D | K_F | K_V;
    case TT_MEM_TAPE: return K_L;
    case TT_MEM_BATCH: return K_B | K_T;
    case TT_MEM_STAGING: return n->part[k] > 3 * sizeof(real) * P ? K_B | K_T | K_H | K_V : model;
    case TT_MEM_RUNTIME:
    case TT_MEM_BLAS: return K_THR;
    case TT_MEM_DEVICE_RUNTIME: return 0;
    default: return model;
    }
}

/* "memory: this run needs X[ on the device| of address space] (the parts counted, largest
 * first), WHO may use Y (HOW); the sizes come from KEYS\nHINT: ..."; keys and hint, when given,
 * replace those worked out from the parts; as_kb: the `ulimit -v` the run needs (ADDRESS) and
 * the one in force. */
static int refuse(const tt_mem_need *n, int kind, const tt_config *c, const tt_corpus *d,
                  const char *who, double avail, const char *how, const char *keys_given,
                  const char *hint_given, const double as_kb[2], char *err, size_t errlen)
{
    char parts[768], keys[512], b1[32], b2[32];
    size_t m = 0;
    bool done[TT_MEM_PARTS] = {0};
    const double total = kind == DEVICE ? n->device : kind == ADDRESS ? n->address : n->host;
    const double P = param_count(c, d);
    int used = 0, top = -1;
    for (double covered = 0;;) { /* largest first; the keys of those that make up 90% */
        int k = -1;
        for (int j = 0; j < TT_MEM_PARTS; j++)
            if (!done[j] && counted(n, j, kind) && (k < 0 || n->part[j] > n->part[k])) k = j;
        if (k < 0) break;
        done[k] = true;
        if (top < 0) top = k;
        if (covered < 0.9 * total) used |= part_keys(n, k, c, P);
        covered += n->part[k];
        if (n->part[k] >= 0.005 * total)
            m += (size_t)snprintf(parts + m, m < sizeof parts ? sizeof parts - m : 0, "%s%s %s",
                                  m ? ", " : "", PART_NAMES[k],
                                  tt_mem_text(n->part[k], b1, sizeof b1));
    }
    const struct { int bit; const char *name; int value; } K[] = {
        {K_D, "model.d_model", c->model.d_model}, {K_F, "model.d_ff", c->model.d_ff},
        {K_L, "model.n_layers", c->model.n_layers}, {K_H, "model.n_heads", c->model.n_heads},
        {K_MAX, "model.max_len", c->model.max_len}, {K_T, "data.seq_len", c->data.seq_len},
        {K_B, "train.batch_size", c->train.batch_size}, {K_THR, "threads", c->threads}};
    m = 0;
    for (size_t i = 0; i < sizeof K / sizeof K[0]; i++)
        if (used & K[i].bit)
            m += (size_t)snprintf(keys + m, m < sizeof keys ? sizeof keys - m : 0, "%s%s %d",
                                  m ? ", " : "", K[i].name, K[i].value);
    if (used & K_V)
        snprintf(keys + m, m < sizeof keys ? sizeof keys - m : 0, "%svocabulary %d words, %d "
                 "outputs", m ? ", " : "", d->words.n, tt_corpus_n_out(d));
    bool step = top == TT_MEM_ARENA || top == TT_MEM_HEAP ||
                (top == TT_MEM_STAGING && (used & K_B));
    const char *hint = step ? "lower train.batch_size or data.seq_len (the step grows with "
                              "batch_size x n_heads x seq_len^2), or the model's size"
                            : "lower model.d_model, model.d_ff or model.n_layers (the parameters "
                              "grow with d_model x (4 d_model + 2 d_ff) per layer)";
    if (hint_given) hint = hint_given;
    char runtime[512]; /* the allowances' sizes, from their definitions */
    const double mib = 1024.0 * 1024;
    if (top == TT_MEM_RUNTIME)
        snprintf(runtime, sizeof runtime, "the process has less memory than the runtime alone "
                 "takes (%.0f MiB and %.0f MiB a thread): free memory, raise the limit, or lower "
                 "threads", RUNTIME_BASE / mib, RUNTIME_PER_THREAD / mib);
    if (top == TT_MEM_DEVICE_RUNTIME)
        snprintf(runtime, sizeof runtime, "the device has less memory free than its runtime "
                 "alone takes (%.0f MiB): free it (other processes on the GPU?)",
                 DEVICE_RUNTIME / mib);
    if (top == TT_MEM_RUNTIME || top == TT_MEM_DEVICE_RUNTIME) hint = runtime;
    char address[768]; /* the `ulimit -v` needed, after or in place of the hint */
    if (kind == ADDRESS && (top == TT_MEM_RUNTIME || top == TT_MEM_BLAS))
        snprintf(address, sizeof address, "raise the address-space limit to `ulimit -v %.0f` "
                 "(kB) or more (it is %.0f), or lower threads (OpenBLAS maps %.0f MiB of address "
                 "space for each)", as_kb[0], as_kb[1], TT_MEM_BLAS_BUFFER / mib);
    else if (kind == ADDRESS)
        snprintf(address, sizeof address, "%s; or raise the address-space limit to `ulimit -v "
                 "%.0f` (kB) or more (it is %.0f)", hint, as_kb[0], as_kb[1]);
    if (kind == ADDRESS) hint = address;
    return tt_errorf(err, errlen, "memory: this run needs %s%s (%s), %s may use %s (%s); the "
                     "sizes come from %s\nHINT: %s",
                     tt_mem_text(total, b1, sizeof b1),
                     kind == DEVICE ? " on the device" : kind == ADDRESS ? " of address space" : "",
                     parts, who, tt_mem_text(avail, b2, sizeof b2), how,
                     keys_given ? keys_given : keys, hint);
}

int tt_mem_check(const tt_mem_need *n, const tt_config *c, const tt_corpus *d,
                 const tt_backend *be, const char *keys, const char *hint, char *err,
                 size_t errlen)
{
    size_t dev_free = 0, dev_total = 0;
    bool device = be->mem_info && be->mem_info(&dev_free, &dev_total) == 0;
    char how[256], b1[32], b2[32], b3[32];
    if (device && n->device > (double)dev_free) {
        snprintf(how, sizeof how, "free of %s on %s", tt_mem_text((double)dev_total, b1,
                 sizeof b1), tt_device_name(c->device));
        return refuse(n, DEVICE, c, d, "the device", (double)dev_free, how, keys, hint, NULL,
                      err, errlen);
    }
    const char *root = getenv("TT_MEM_ROOT"); /* tests only: a fake /proc and /sys */
    tt_mem_avail a;
    tt_mem_avail_read(&a, root ? root : "");
    double resident = a.meminfo < 0 ? a.cgroup : a.cgroup < 0 ? a.meminfo
                                                              : fmin(a.meminfo, a.cgroup);
    bool over_as = a.rlimit >= 0 && n->address > a.rlimit;
    if (!over_as && (resident < 0 || n->host <= resident)) return 0;
    snprintf(how, sizeof how, "MemAvailable %s; cgroup limit %s%s; RLIMIT_AS %s%s",
             a.meminfo < 0 ? "unknown" : tt_mem_text(a.meminfo, b1, sizeof b1),
             a.cgroup < 0 ? "none" : tt_mem_text(a.cgroup, b2, sizeof b2),
             a.cgroup < 0 ? "" : " left",
             a.rlimit < 0 ? "unlimited" : tt_mem_text(a.rlimit, b3, sizeof b3),
             a.rlimit < 0 ? "" : " left");
    if (!over_as)
        return refuse(n, HOST, c, d, "the process", a.host, how, keys, hint, NULL, err, errlen);
    /* whole MiB and one more: VmSize moves by some kB from one start to the next */
    const double mib = 1024.0 * 1024;
    const double as_kb[2] = {1024 * (ceil((fmax(a.vmsize, 0) + n->address) / mib) + 1),
                             a.as_limit / 1024};
    return refuse(n, ADDRESS, c, d, "the process", a.rlimit, how, keys, hint, as_kb, err,
                  errlen);
}

int tt_run_check_memory(const tt_config *c, const tt_corpus *d, char *err, size_t errlen)
{
    const tt_backend *be = tt_backend_open(c->device, err, errlen);
    if (!be) return -1;
    be->set_threads(c->threads); /* as tt_run_init: the attention scratch is per thread */
    size_t dev_free = 0, dev_total = 0;
    bool device = be->mem_info && be->mem_info(&dev_free, &dev_total) == 0;
    tt_mem_need n;
    tt_mem_need_for(&n, c, d, be, device);
    return tt_mem_check(&n, c, d, be, NULL, NULL, err, errlen);
}

bool tt_mem_env_for_rlimit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) || rl.rlim_cur == RLIM_INFINITY) return false;
    const char *set = getenv("OPENBLAS_NUM_THREADS");
    if (set && !strcmp(set, "1")) return false;
    return setenv("OPENBLAS_NUM_THREADS", "1", 1) == 0;
}
