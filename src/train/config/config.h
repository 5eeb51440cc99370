/* config.h: the run configuration (docs/design.md section 3, a contract): one JSON object read with
 * cJSON, --set KEY=VALUE overrides applied to the JSON before validation, every key checked
 * (unknown keys, types, ranges, enums, cross-key rules, data files that must exist), defaults
 * filled in. A user's mistake is never an abort: tt_config_load returns -1 and one message
 * "FILE: JSON.PATH: found X; allowed Y" (or "FILE:LINE:COL: invalid JSON: ..."). */
#ifndef TT_CONFIG_H
#define TT_CONFIG_H

#include "tensor/common.h"
#include "tensor/tensor.h"

#define TT_CONFIG_PATH 1024
#define TT_CONFIG_ERR 1024
/* The most bytes a config file may hold (read_text stops after one more). */
#define TT_CONFIG_MAX_BYTES ((size_t)16 << 20)

typedef enum tt_task { TT_TASK_TAG, TT_TASK_CLASSIFY, TT_TASK_MLM, TT_TASK_LM } tt_task;
typedef enum tt_optimizer { TT_OPT_ADAMW, TT_OPT_SGD } tt_optimizer;
typedef enum tt_schedule { TT_SCHED_CONSTANT, TT_SCHED_LINEAR, TT_SCHED_COSINE } tt_schedule;
typedef enum tt_pool { TT_POOL_MEAN, TT_POOL_FIRST } tt_pool;
typedef enum tt_study { TT_STUDY_NONE, TT_STUDY_SCALING } tt_study;

typedef struct tt_config {
    char path[TT_CONFIG_PATH]; /* the config file as given */
    char dir[TT_CONFIG_PATH];  /* its folder: data paths are relative to it */
    int64_t seed;              /* default 0; 0 <= seed < 2^53 */
    tt_device device; /* "cpu" (default) | "cuda" (only in a CUDA build) | "guard" (tests) */
    int threads;               /* default 0 = all cores */
    bool matmul_high; /* "matmul_precision": "highest" (default, float32) | "high" (TF32 tensor
                         cores on GPUs; the CPU ignores it) */
    bool cuda_graphs; /* default true: on "cuda", each step after the first two replays the
                         second, captured as a CUDA graph; false launches every call (debugging).
                         Other devices have nothing to replay */
    struct {
        tt_task task;                 /* required */
        char train[TT_CONFIG_PATH];   /* default "train.txt", resolved against dir, must exist */
        char valid[TT_CONFIG_PATH];   /* default "valid.txt", resolved against dir, must exist;
                                         empty when valid_share is given */
        double valid_share; /* absent (0, default): the validation split is data.valid; in
                               (0, 0.5]: that share of data.train's examples (data.c) */
        int seq_len;                  /* required, 1..4096 */
        char **probes;                /* default [] */
        int n_probes;
        char **ambiguous; /* default []: words whose tags need context; valid_acc_ambiguous */
        int n_ambiguous;
        bool truncate;    /* default false: lines longer than seq_len are an error */
        double mask_prob; /* mlm: default 0.15, in (0, 1) */
    } data;
    struct {
        int d_model, n_heads, n_layers, d_ff; /* defaults 64, 4, 2, 256 */
        int max_len;                          /* default data.seq_len; must be >= seq_len */
        bool gelu;                            /* activation "relu" (default) | "gelu" */
        bool pre_norm;                        /* norm "post" (default) | "pre" */
        bool learned_pos;       /* positional "sinusoidal" (default) | "learned" */
        bool embed_scale;       /* default false */
        double dropout;         /* default 0.1, [0, 1) */
        double attn_dropout;    /* default 0.0, [0, 1) */
        bool attn_scale_none;   /* attn_scale "sqrt_dk" (default) | "none" */
        double attn_temperature; /* default 1.0, > 0 */
        bool causal;             /* default: true for task lm, else false; lm requires true */
        tt_pool pool;            /* classify: pool "mean" (default) | "first" */
    } model;
    struct {
        int epochs, batch_size, warmup_steps; /* defaults 10, 32, 0 */
        tt_optimizer optimizer;               /* "adamw" (default) | "sgd" */
        double lr;           /* default 1e-3, > 0 */
        double beta1, beta2; /* defaults 0.9, 0.999, in [0, 1) */
        double eps;          /* default 1e-8, > 0 */
        double weight_decay; /* default 0.01, >= 0 */
        double momentum;     /* sgd: default 0.9, [0, 1) */
        double grad_clip;    /* default 1.0, >= 0 (0 = no clipping) */
        tt_schedule schedule; /* "constant" (default) | "linear" | "cosine" */
        int schedule_epochs;  /* default train.epochs, >= 1: the epochs the schedule spans;
                                 later steps keep its final rate */
        bool schedule_epochs_set; /* given by the user (else it follows train.epochs, and a
                                     resumed run takes its checkpoint's) */
    } train;
    struct {
        char dir[TT_CONFIG_PATH]; /* default "runs/<config file name without .json>",
                                     relative to the current directory */
        int attention_every;      /* default 1, >= 0 (0 = never) */
        int checkpoint_every;     /* default 0 = only at the end, >= 0 */
        int log_every;            /* default 1: a metrics line every N steps, >= 1 */
    } output;
    struct {
        tt_study kind; /* "none" (default): train | "scaling": the 1/sqrt(d_k) study */
        int samples;   /* default 10000, >= 1000: draws per d_k */
        int d_model;   /* default 256: width of the models trained with and without scaling */
        int n_heads;   /* default 4 (d_k = d_model / n_heads, 64) */
        int epochs;    /* default 3: epochs of each of those trainings */
        int seeds;     /* default 5, >= 1: each training repeated with seed + 0 .. seeds - 1 */
    } study;
} tt_config;

/* Reads PATH, applies the overrides ("model.d_model=128": a dotted path to a known key, the
 * value parsed as JSON, else taken as a string; "data.valid=null" removes the key) in order,
 * validates, fills defaults. 0 on
 * success; -1 with one message in err (c is then freed and empty). */
int tt_config_load(tt_config *c, const char *path, const char *const *sets, int n_sets,
                   char *err, size_t errlen);
/* A resolved config read back from text (a checkpoint's "config" metadata): the same overrides
 * and checks as tt_config_load, but the data files need not exist (a checkpoint outlives its
 * data; their paths are kept as written). origin names the text in messages. */
int tt_config_from_text(tt_config *c, const char *text, const char *origin,
                        const char *const *sets, int n_sets, char *err, size_t errlen);
/* The resolved config (every key, defaults included) as a JSON object text, malloc'ed; the same
 * key names as the file, so it loads again as a config. */
char *tt_config_to_json(const tt_config *c);
/* The reference of every config key as a Markdown table (key, type, default, allowed values,
 * meaning), from the schema the reader checks against: docs/config.md shows it (make docs).
 * Written into buf as snprintf would; returns its length, so a call with len 0 sizes it. */
size_t tt_config_reference(char *buf, size_t len);
void tt_config_free(tt_config *c);

const char *tt_task_name(tt_task t);

#endif
