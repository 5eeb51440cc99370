/* use.h: using a trained model, the API behind ./infer (infer.c): a checkpoint opened as a run
 * that is never trained (open.c), and what can be asked of it: the attention maps of any
 * sentence, predictions for each task, generation from a language model (predict.c), and the
 * evaluation of a data file with the trainer's own evaluation (tt_run_evaluate).
 *
 * Status convention of src/train: 0, or -1 with err filled ("what, where, what is allowed");
 * only infer.c turns -1 into exit status 2. Answers go to `out` (stdout in ./infer), notes to stderr. */
#ifndef TT_USE_H
#define TT_USE_H

#include "train/report/maps.h"
#include "train/run/run.h"

/* Generation's random stream (the streams of one seed are listed in run/run.h). */
enum { TT_STREAM_GENERATE = 7 };

/* Opens a checkpoint written by ./train: its config (the "config" metadata, with `sets`
 * applied: ./infer passes device=... and threads=...), its vocabulary and labels, and its
 * parameters; the data files need not exist any more. Every part is checked (format, config,
 * vocabulary, tensor names and shapes) and named in the message. Free with tt_run_free. */
int tt_use_open(tt_run *r, const char *checkpoint, const char *const *sets, int n_sets,
                char *err, size_t errlen);

/* The maps of n sentences (eval mode), as one epoch (the checkpoint's) of maps.h; words past
 * data.seq_len are cut (a note on stderr). Free with tt_attn_epoch_free. */
void tt_use_maps(tt_run *r, const char *const *texts, int n, tt_attn_epoch *e);

/* The logits of one eval-mode forward of ids[0..n) (1 <= n <= data.seq_len) as one row of a
 * batch of seq_len, padded: [seq_len][n_out] ([1][n_out] for classify), on the host, malloc'ed. */
real *tt_use_logits(tt_run *r, const int32_t *ids, int n);

/* One line of `out` per sentence, by task: tag "word/TAG ..." (top_k > 1: each word's top_k tags
 * with their probabilities, one word per line); classify "LABEL  p" and the next labels up to
 * top_k; mlm each [MASK]'s top_k fillers with probabilities (a sentence without [MASK] is an
 * error); lm the top_k next words. Unknown words are fed and shown as [UNK]. */
int tt_use_predict(tt_run *r, const char *text, int top_k, FILE *out, char *err, size_t errlen);

typedef struct tt_generate_opts {
    int words;          /* how many words to add, >= 1 */
    double temperature; /* > 0: sample from softmax(logits / temperature); 0: the most likely */
    int top_k;          /* sample among the top_k words only; 0: all */
    uint64_t seed;      /* the draws: Philox (seed, TT_STREAM_GENERATE), one per word */
} tt_generate_opts;
/* lm checkpoints: the prompt, then o->words words, each drawn from the model's distribution of
 * the next word given the words before it (the last data.seq_len of them); the special tokens
 * are never drawn. Writes "prompt words ..." as one line (unknown prompt words as [UNK]) and,
 * when ids is not NULL, the n_prompt + o->words ids to ids. */
int tt_use_generate(tt_run *r, const char *prompt, const tt_generate_opts *o, FILE *out,
                    int32_t *ids, char *err, size_t errlen);

/* spelling.c: a user's sentence spelled as the training corpus is, by rules read off the
 * vocabulary: capitals (ASCII, Latin-1) as lower case when no vocabulary word has one; ASCII
 * punctuation
 * that no vocabulary word holds dropped, separating words; a word the vocabulary has as written
 * (a special token included) kept as it is. The API above takes words as they are; ./infer
 * spells every sentence first. */
typedef struct tt_use_spelling {
    bool lower;      /* no vocabulary word has a capital (ASCII or Latin-1) */
    bool keep[128];  /* the ASCII punctuation characters some vocabulary word holds */
} tt_use_spelling;
void tt_use_spelling_of(tt_use_spelling *s, const tt_vocab *v);
/* text spelled by s, its words separated by one space (none: ""); malloc'ed. */
char *tt_use_spell(const tt_use_spelling *s, const tt_vocab *v, const char *text);
/* w[0..n) as it may be shown between double quotes: a quote or a backslash after a backslash,
 * C0 controls, DEL and bytes that are not UTF-8 as \xHH, C1 controls as \u00HH, other UTF-8 as
 * it is; malloc'ed. */
char *tt_use_escaped(const char *w, size_t n);
/* One line "warning: WHERE: not in the model's vocabulary, read as [UNK]: "w1", "w2"" on out
 * naming each word of text that v lacks (control characters and bytes that are not UTF-8
 * escaped), none when v has them all; returns their count. */
int tt_use_warn_unknown(const tt_vocab *v, const char *text, const char *where, FILE *out);

/* The trainer's evaluation (loss, accuracy, accuracy on data.ambiguous, attention entropy) of a
 * data file in the checkpoint's task format, with the run's batch size: for the validation
 * file the figures of the last evaluation line the trainer wrote. */
int tt_use_evaluate(tt_run *r, const char *path, tt_eval *e, char *err, size_t errlen);

#endif
