/* run.h: the run API behind ./train and the study: one run's state (run.c), the training loop
 * (loop.c), evaluation, checkpoints (checkpoint.c), the first-step dump (dump.c) and the
 * step's memory plan (memory.c).
 *
 * Device memory: the parameters, gradients, moments, step arena and gradient heap live on
 * cfg.device; this layer reaches them only through the backend table (g.be) or the staging
 * pair tt_params_to_host / tt_params_from_host (tensor/backend.h states the rule; the guard
 * device enforces it in the tests). Everything else here (batch, order, pool) is host memory.
 *
 * Status convention of all of src/train: a function that can fail on the user's input returns
 * 0, or -1 with err filled ("what, where, HINT"); only cli.c turns -1 into exit status 2.
 *
 * Random streams of one seed: 0 initial values, 1 dropout, 2 shuffling (data.c), 3 mlm masks in
 * training, 4 mlm masks in validation (reset before every evaluation, so every epoch is scored
 * on the same masks), 5 the split of data.valid_share (data.c). The shuffle of epoch e is drawn
 * from (seed, e) alone, and the dropout and mask cursors are saved in checkpoints, so a resumed
 * run continues exactly. */
#ifndef TT_RUN_H
#define TT_RUN_H

#include "nn/model.h"
#include "train/data/data.h"
#include "train/optim/optim.h"

#include <stdio.h>

enum { TT_STREAM_INIT = 0, TT_STREAM_DROPOUT = 1, TT_STREAM_MASK = 3, TT_STREAM_MASK_VALID = 4 };

typedef struct tt_run tt_run;
/* Called after every optimizer step (the gradients of that step are still in the table). */
typedef void (*tt_step_hook)(tt_run *r, double loss, double grad_norm, void *ctx);
/* The path of a checkpoint the loop writes: "DIR/checkpoints/step_NNNNNNNN.safetensors". */
#define TT_RUN_CKPT_PATH (TT_CONFIG_PATH + 64)

struct tt_run {
    tt_config cfg;
    tt_corpus data;
    tt_model model;
    tt_optim opt;
    tt_arena arena, meta; /* the step arenas, sized at start-up (tt_step_sizes_for) */
    tt_heap grads;        /* the step's intermediate gradients, released during backward */
    tt_rng dropout, mask;
    tt_graph g;
    tt_batch batch;
    double *step_norm;   /* device: the last step's gradient norm, read after the step */
    bool replay;         /* steps may be replayed (backend.h's step bracket): on cuda, a graph */
    int *order;          /* the epoch's permutation of the training examples */
    real *pool;          /* classify: [B,T] pooling weights (host; copied in per batch) */
    int64_t step;        /* optimizer steps done */
    int epoch;           /* epochs done */
    /* the unfinished epoch (epoch + 1): its steps done, the sum of their training losses and
     * their real tokens; non-zero only mid-epoch (and in a mid-epoch checkpoint) */
    int epoch_step;
    double epoch_loss_sum;
    int64_t epoch_tokens;
    int64_t step_tokens; /* the last step's real input tokens, over every rank */
    bool stop_agreed;    /* over several ranks: a rank had caught a signal at the last step */
    bool err_all;        /* tt_run_train's error is one every rank met (a loss not finite) */
    int steps_per_epoch;
    int64_t total_steps; /* the steps the lr schedule spans: train.schedule_epochs' */
    FILE *metrics;
    double *entropy;     /* [L*H]: the last evaluation's mean attention entropy per head */
    bool no_checkpoints; /* a caller's trainings that nobody resumes (the study's later seeds) */
    tt_step_hook on_step; /* optional */
    tt_step_hook on_stop; /* optional: a signal stops the run, its checkpoint comes next */
    void *on_step_ctx;    /* both hooks' */
    char *line;           /* metrics.c's line buffer, line_cap bytes */
    size_t line_cap;
    int stop_signal;      /* the signal that stopped tt_run_train (0: none) */
    char stop_checkpoint[TT_RUN_CKPT_PATH]; /* the checkpoint it wrote then ("": none) */
    char resumed_run[33]; /* on --resume: the checkpoint's run id ("": it names none) */
};

/* The memory of one training step of an encoder (post-LN or pre-LN, any activation, dropout
 * or not, every task), worked out before the first step: nothing grows inside a step. */
typedef struct tt_step_sizes {
    size_t values;   /* the data arena: forward values, saved tensors, attention scratch */
    size_t grads;    /* the gradient heap: the most gradients alive at once in backward */
    int grad_blocks; /* the heap's table of live blocks */
    size_t tape;     /* the meta arena: vars and nodes */
} tt_step_sizes;
/* B batch rows, T sequence length, d = d_model, n_out = the head's outputs (vocabulary or
 * classes), gelu the FFN's activation (else ReLU, fused with its dropout), on the device of
 * `be` (its attention scratch). The formulas and their margins are explained in memory.c. */
tt_step_sizes tt_step_sizes_for(const tt_backend *be, int B, int T, int d, int d_ff,
                                int n_heads, int n_layers, int n_out, bool gelu);

/* Everything but the config and data: model, optimizer, arenas, batch; 0 or -1 with err.
 * train.schedule_epochs follows train.epochs here unless the user set it. */
int tt_run_init(tt_run *r, char *err, size_t errlen);
void tt_run_free(tt_run *r);
/* The learning rate of optimizer step k (0-based) under the run's schedule. */
double tt_run_lr(const tt_run *r, int64_t k);
/* On --resume, with the resumed checkpoint's config (JSON text): unless the user set
 * train.schedule_epochs, the schedule keeps the checkpoint's span (its schedule_epochs, or its
 * epochs for a checkpoint written before the key), so raising train.epochs never makes the
 * rate jump back up. */
void tt_run_resume_schedule(tt_run *r, const char *config_json);

/* The loss of batch b as recorded on r->g (reset first); logits and, if att is not NULL, each
 * layer's attention weights are returned too. Training mode follows r->g.training. */
tt_var *tt_run_forward(tt_run *r, const tt_batch *b, tt_var **logits, tt_tensor *att);

typedef struct tt_eval {
    double loss, acc, acc_ambiguous;
    int64_t count, count_ambiguous;
} tt_eval;
/* Loss and accuracy on the validation split (eval mode, no dropout); also fills r->entropy with
 * each head's attention entropy (natural log) averaged over every real query row. */
tt_eval tt_run_evaluate(tt_run *r);

/* loop.c: one training step, the body of the training loop (and what bench/bench_step.c
 * times): batch s of the epoch's order (r->order) filled, then, inside the backend's step
 * bracket (no host read: a CUDA device replays it as a graph), forward in training mode as
 * r->g has it, zero grad, backward, clipping (train.grad_clip) and the optimizer step at the
 * rate of step r->step (*lr); after the bracket the loss and the gradient norm before
 * clipping (*grad_norm) are read. Returns the loss; when it is not finite nothing was updated
 * (the optimizer's kernels are gated on it). The caller advances r->step. */
double tt_run_step(tt_run *r, int s, double *grad_norm, double *lr);
/* loop.c: the gradients of the forward pass just recorded (loss: its output) on r->batch,
 * summed over the ranks of a data-parallel run (dist.h): zero grad, backward seeded so that
 * the sum is the whole batch's mean's gradient, the all-reduce. Over several ranks the whole
 * batch's loss is summed on the host first (the seed needs every rank's targets; the same
 * value on every rank) and returned, and one that is not finite returns before the backward;
 * one process reads nothing and returns 0 (tt_run_loss reads it later). Sets
 * r->step_tokens and r->stop_agreed. */
double tt_run_grads(tt_run *r, tt_var *loss);
/* The whole batch's loss after tt_run_grads returned `summed`: that, over several ranks, else
 * loss's value read from the device. */
double tt_run_loss(const tt_run *r, const tt_var *loss, double summed);

/* loop.c: train until cfg.train.epochs, writing metrics, checkpoints and attention dumps
 * (checkpoints/ and attention/ are made with their first file). A run resumed from a mid-epoch
 * checkpoint (epoch_step > 0) goes on at that step of the epoch's shuffle. When a signal was
 * noted (signals.c), the run stops after the current optimizer step (a signal during the
 * epoch's last step or its evaluation: after the epoch's files): it writes the checkpoint of
 * that point (checkpoints/step_NNNNNNNN.safetensors mid-epoch, else the epoch's, unless
 * no_checkpoints), sets stop_signal and stop_checkpoint, and returns -1 with "interrupted
 * (SIGINT) at step ..." in err; cli.c makes that exit status 128 + the signal's number. Over
 * several ranks every rank stops with the same signal, the highest number any rank caught. */
int tt_run_train(tt_run *r, char *err, size_t errlen);
/* loop.c: the HINT line for a loss that is not finite, naming the keys of c that likely made it
 * so: model.attn_temperature when below 1e-3 (the scores and their gradients are divided by
 * it), train.weight_decay when >= 1 with lr * weight_decay >= 1 (each update flips or grows
 * the weights), train.lr, train.grad_clip when off. Before any update (updated false) the
 * learning rate and what goes with it cannot be the cause, and the hint says so. */
const char *tt_run_nonfinite_hint(const tt_config *c, bool updated, char *buf, size_t len);

/* signals.c: tt_signals_catch installs SIGINT, SIGTERM, SIGHUP and SIGPIPE handlers that only
 * note the first signal (a second SIGINT or SIGTERM ends the process at once; SIGHUP and SIGPIPE
 * again are let be; SIGHUP or SIGPIPE ignored at the start stays ignored); tt_signals_release
 * puts the previous ones back (SIGPIPE ignored if a pipe closed) and forgets the note.
 * tt_signal_caught: the noted signal, 0 none. */
void tt_signals_catch(void);
void tt_signals_release(void);
int tt_signal_caught(void);
const char *tt_signal_name(int sig); /* "SIGINT", "SIGTERM", "SIGHUP", "SIGPIPE" */

/* metrics.c: the lines of metrics.jsonl, each written whole with the write checked (0, or -1
 * with "DIR/metrics.jsonl: cannot write: REASON"); numbers that are not finite as null.
 * tt_metrics_begin makes the line buffer (before the first step). A step line has step,
 * epoch (r->epoch + 1, the one in progress) and m's fields; an evaluation line (after the
 * epoch, r->epoch) m's fields (m NULL: the epoch-0 line, step 0) and e's, and the attention
 * entropy per layer and head (r->entropy). */
typedef struct tt_metrics_row {
    double loss, lr, grad_norm, tokens_per_s;
} tt_metrics_row;
void tt_metrics_begin(tt_run *r);
int tt_metrics_step(tt_run *r, const tt_metrics_row *m, char *err, size_t errlen);
int tt_metrics_eval(tt_run *r, const tt_metrics_row *m, const tt_eval *e, char *err,
                    size_t errlen);
/* What a run is about to do (task, data, model, schedule, memory), on stdout. */
void tt_run_describe(const tt_run *r);

/* The progress line's fields, and the line for a terminal `width` columns wide (loop.c): it is
 * always shorter than width, so it never wraps: the bar shrinks (24 cells down to 5), then the
 * fields go, least important first: tok/s, ETA, the bar, the loss, the step count. */
typedef struct tt_progress {
    int epoch, epochs, step, steps;
    double loss, tokens_per_s, eta_s;
} tt_progress;
const char *tt_progress_format(char *out, size_t len, const tt_progress *p, int width);

/* folder.c, the run folder (output.dir). Before anything is written: a checkpoints/,
 * attention/ or metrics.jsonl that is a link is refused; a folder that holds a run's files (its
 * run.json's list; in a folder of an older version, the names a run writes) is refused (-1,
 * err names the folder, what it holds and the ways out: --resume its latest checkpoint,
 * --overwrite, another output.dir) unless `overwrite`, which removes those files (never others,
 * never through a link) and the folders left empty, or `resume` (the checkpoint path, already
 * loaded into r), which must be the folder's own run (tt_run_resume_check) and keeps the
 * folder's history up to the checkpoint's step and epoch, dropping what came after. Unless it
 * refuses, the temporary files of killed writers (NAME.tmp.XXXXXX) are removed first; then
 * the folder's record (run.json) is begun: the same run's on resume into its own folder, else
 * a new one. */
int tt_run_folder_claim(tt_run *r, const char *resume, bool overwrite, char *err, size_t errlen);
/* record.c: run.json, a run folder's record (its run's id, start, the checkpoint a resumed
 * run came from, the files the run wrote, relative to the folder). One record is active at a
 * time (tt_record_begin to tt_record_end): every file written under its folder through
 * tt_atomic_open/close, or named to tt_record_add, joins its list, and run.json is rewritten
 * atomically when the list grows. */
#define TT_RUN_ID_LEN 32
typedef struct tt_run_record {
    char id[TT_RUN_ID_LEN + 1];      /* lowercase hex */
    char started[32];                /* UTC, "2026-01-31T12:00:00Z" */
    char from_id[TT_RUN_ID_LEN + 1]; /* resumed_from: the checkpoint's run ("" unknown) */
    char *from_path;                 /* resumed_from: the checkpoint (NULL: not resumed) */
    char **files;
    int n, cap;
} tt_run_record;
/* A fresh record: a random id (getrandom), started now, no files. */
void tt_record_new(tt_run_record *rec);
/* DIR/run.json into rec (*found false, 0: there is none); -1 with err when it is a link or
 * not a record. */
int tt_record_read(tt_run_record *rec, const char *dir, bool *found, char *err, size_t errlen);
void tt_record_free(tt_run_record *rec);
bool tt_record_lists(const tt_run_record *rec, const char *rel);
void tt_record_list(tt_run_record *rec, const char *rel);
void tt_record_unlist(tt_run_record *rec, const char *rel);
bool tt_record_id_valid(const char *id); /* 32 lowercase hex digits */
/* rec (moved: *rec is emptied) becomes the active record of folder dir; run.json written. */
int tt_record_begin(tt_run_record *rec, const char *dir, char *err, size_t errlen);
void tt_record_end(void);
/* A file written at path (dir/..., as the writer named it) joins the active record's list if it
 * lies under its folder; 0, or -1 with err when run.json cannot be rewritten. */
int tt_record_add(const char *path, char *err, size_t errlen);
/* The active record's id, NULL when none is active. */
const char *tt_record_id(void);
/* dir/name is listed in the active record (true when none is active). */
bool tt_record_active_lists(const char *dir, const char *name);
/* resume.c: --resume C into folder F, before anything in F changes (rec: F's run.json, found
 * or not; has_files: F holds the files of a run; same_file: C is one of F's checkpoints, the
 * very file). C's run id (r->resumed_run) must be F's, and F's metrics.jsonl must hold C's
 * step; or F's run must have begun as a resume from C itself (run.json's resumed_from, the
 * very file); a folder with no record: empty, or C one of its checkpoints. -1 with err (F's
 * run, the ways out) otherwise. */
int tt_run_resume_check(const tt_run *r, const char *resume, const tt_run_record *rec,
                        bool found, bool has_files, bool same_file, char *err, size_t errlen);
/* metrics.jsonl at path cut back to the lines up to optimizer step `step` (complete lines
 * only), rewritten atomically when a line goes: the number of lines dropped, or -1 with err. */
int tt_run_cut_metrics(const char *path, int64_t step, char *err, size_t errlen);
/* One ./train a folder: dir made if need be, then an exclusive flock on it, held by *fd
 * (close-on-exec) until it is closed or the process ends (the kernel releases it even after a
 * SIGKILL). No lock file: nothing in the folder changes. Taken after every input check and
 * before tt_run_folder_claim, which may then remove a killed run's temporary files. -1 with
 * err when another process holds it. */
int tt_run_folder_lock(const char *dir, int *fd, char *err, size_t errlen);
/* mkdir -p */
int tt_make_dirs(const char *path, char *err, size_t errlen);
/* output.dir made, the resolved config written there (config.json). */
int tt_run_write_config(const tt_run *r, char *err, size_t errlen);
/* The same, then metrics.jsonl opened for writing (appending on resume). */
int tt_run_prepare_dir(tt_run *r, bool append, char *err, size_t errlen);
/* checkpoint.c: the contract's safetensors layout (docs/design.md section 5), written
 * atomically. */
int tt_checkpoint_save(tt_run *r, const char *path, char *err, size_t errlen);
int tt_checkpoint_load(tt_run *r, const char *path, char *err, size_t errlen);

/* ckpt_check.c: every value read from a checkpoint range-checked, for --resume and ./infer
 * alike; each message names the file and the entry. */
typedef struct tt_ckpt_info {
    int64_t step;
    int epoch;
    bool mid_epoch; /* epoch_loss_sum and epoch_tokens are there: a checkpoint inside an epoch */
    double epoch_loss_sum;
    int64_t epoch_tokens;
    int64_t optim_step, rng_dropout, rng_mask; /* tt_checkpoint_check_data's */
    char run[TT_RUN_ID_LEN + 1]; /* the run that wrote it ("": it names none) */
} tt_ckpt_info;
/* tt_st_open, with a file that is plainly not a checkpoint named so: a folder, a config, other
 * text ("PATH is a config, not a checkpoint" and a HINT). */
int tt_checkpoint_open(tt_st_file *f, const char *path, char *err, size_t errlen);
/* From the header alone (tt_st_open), before any data is read: format, config present, epoch
 * (0..999999) and step >= epoch (plain decimal integers), run (if there: tt_record_id_valid,
 * into out->run), the mid-epoch pair (both or none; epoch_loss_sum finite >= 0, epoch_tokens
 * an integer). */
int tt_checkpoint_check_meta(const tt_st_file *f, const char *path, tt_ckpt_info *out,
                             char *err, size_t errlen);
/* --resume, the run's steps_per_epoch known: step must be epoch * steps_per_epoch, or lie
 * strictly inside the next epoch for a mid-epoch checkpoint. */
int tt_checkpoint_check_step(const tt_ckpt_info *info, const char *path, int steps_per_epoch,
                             char *err, size_t errlen);
/* With the data read: optim.step == step, the random cursors multiples of 4 in [0, 2^62],
 * every real tensor finite, every optim.exp_avg_sq.* >= 0. */
int tt_checkpoint_check_data(const tt_st_file *f, const char *path, tt_ckpt_info *info,
                             char *err, size_t errlen);
/* The most data bytes a checkpoint of the table ps can hold (values and two moments as F64):
 * tt_st_read_data's bound, so that a huge file is refused before it is read. */
uint64_t tt_checkpoint_max_data(const tt_params *ps);
/* --resume: the config cfg against the checkpoint's (its __metadata__.config). The keys that
 * must match (docs/training.md, "Resume rules") differing: -1, err listing each with both
 * values. Other differences but those that may change freely: a note on stdout. */
int tt_checkpoint_check_config(const tt_config *cfg, const char *ckpt_json, const char *path,
                               char *err, size_t errlen);
/* dump.c, --dump-first-step: one forward and backward pass on the first training batch,
 * dropout off. */
int tt_dump_first_step(tt_run *r, const char *path, char *err, size_t errlen);

#endif
