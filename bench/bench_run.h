/* bench_run.h: the run bench_step.c times, built the way ./train builds it (src/train/cli.c:
 * config, corpus, memory check, tt_run_init; no output folder). A config is a file (with the
 * data it names, through the project's loaders) or one of the named standard configs, which
 * become the same tt_config from JSON text and a corpus of random tokens made in memory; from
 * there both go through one code path. Also the step's matmul FLOPs and the one-line JSON spec
 * that bench/bench_torch.py builds PyTorch's model from. Bench-only code: `bench_` prefix. */
#ifndef TT_BENCH_RUN_H
#define TT_BENCH_RUN_H

#include "train/run/run.h"

/* The named configs, space-separated: "tiny small medium gpt-small gpt-medium base". */
extern const char BENCH_NAMES[];

typedef struct bench_run {
    tt_run r;
    char name[TT_CONFIG_PATH]; /* the named config's name, or the config path as given */
    bool named;
    double pad_share; /* the share of padding among an epoch's input positions (B*T each) */
} bench_run;

/* Loads `config` (a name of BENCH_NAMES, else a path) with the --set overrides, the config's
 * "threads" replaced by `threads` (both sides of the bench run the same count), its corpus,
 * and checks the memory the run needs; the run itself is not set up. 0, or -1 with err
 * (the project's config, data and memory messages); b is then freed. */
int bench_load(bench_run *b, const char *config, const char *const *sets, int n_sets,
               int threads, char *err, size_t errlen);
/* tt_run_init on a loaded b: 0 or -1 with err. */
int bench_init(bench_run *b, char *err, size_t errlen);
void bench_free(bench_run *b);

/* Matmul FLOPs of one training step from the shapes (N = B*T rows, dk = d/h): per layer qkv
 * 2N(3d)d, out_proj 2Ndd, ffn1 and ffn2 2N d_ff d each, and per (batch, head) the scores and
 * the weights x V 2 P dk each, with P = T*T, or T(T+1)/2 for a causal model (the useful half:
 * keys after the query are masked); then the head 2 N n_out d (classify: 2 B n_out d, after the
 * pooling gemm 2 B T d). The backward does two gemms per forward gemm, so a step is 3x the
 * forward (the pooling: 2x, its weights need no gradient). */
double bench_step_flops(const bench_run *b);

/* The resolved model, batch and optimizer as one line of JSON (malloc'ed): name, task, V,
 * n_out, T, B, d, h, L, d_ff, norm, activation, positional, max_len, causal, dropout,
 * attn_dropout, attn_scale, attn_temperature, embed_scale, pool (classify), mask_prob (mlm),
 * optimizer, lr, beta1, beta2, eps, weight_decay, momentum, grad_clip, schedule, warmup_steps,
 * seed, threads, device, pad_share. Needs no bench_init. */
char *bench_spec_json(const bench_run *b);

#endif
