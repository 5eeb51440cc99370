/* data.h: corpora and batches (the word-level tokenizer: tokenizer.h).
 *
 * File formats (UTF-8, one example per line, words separated by ASCII spaces, blank lines
 * skipped, a trailing '\r' ignored):
 *   tag       words<TAB>tags       one tag per word
 *   classify  LABEL<TAB>words
 *   mlm, lm   words
 * The validation split is the file data.valid, or with data.valid_share that share of
 * data.train's examples, drawn by seed (data.c says how), each part in the file's order.
 * The vocabulary comes from the training split: [PAD] = 0, [UNK] = 1, [MASK] = 2, then words by
 * decreasing count (ties in byte order), so ids do not depend on line order. Tags and labels
 * likewise, from the training file only; an unknown tag in a validation file is an error (with
 * a share, tags and labels come from the whole training file: they belong to the task).
 * Every error names the file and line: tt_corpus_load returns -1 with one message. */
#ifndef TT_DATA_H
#define TT_DATA_H

#include "tensor/rng.h"
#include "train/config/config.h"
#include "train/data/tokenizer.h"

#include <stdio.h>

/* The random streams of data.c (the table of every stream: run.h). */
enum { TT_STREAM_SHUFFLE = 2, TT_STREAM_SPLIT = 5 };

typedef struct tt_example {
    int32_t *words; /* n ids */
    int32_t *tags;  /* tag: n tag ids; classify: one label id; else NULL */
    int n, line;
} tt_example;

typedef struct tt_split {
    char path[TT_CONFIG_PATH];
    tt_example *ex;
    int n;
    int64_t n_words;
    int n_truncated; /* lines cut to seq_len (data.truncate) */
    int32_t *store;  /* every id of the split, owned */
} tt_split;

typedef struct tt_corpus {
    tt_task task;
    int seq_len;
    tt_vocab words;   /* input vocabulary */
    tt_vocab labels;  /* tags (tag) or labels (classify); empty otherwise */
    tt_split train, valid;
    bool *ambiguous;  /* per word id: a word listed in data.ambiguous */
    int n_ambiguous;  /* how many of the listed words occur in the vocabulary */
} tt_corpus;

/* The most bytes a data file may hold: what a toy corpus never reaches, and a bound on the
 * memory a load takes. */
#define TT_DATA_MAX_BYTES ((size_t)1 << 30)

int tt_corpus_load(tt_corpus *c, const tt_config *cfg, char *err, size_t errlen);
void tt_corpus_free(tt_corpus *c);
/* One more file read as a split of c with c's vocabularies as they are (a checkpoint's): words
 * it lacks become [UNK]; a tag or label it lacks is an error naming the line. The format, the
 * seq_len rule and data.truncate are the training files'. On error s is left empty. */
int tt_split_load(tt_corpus *c, const tt_config *cfg, tt_split *s, const char *path, char *err,
                  size_t errlen);
/* Output classes of the head: labels for tag and classify, the vocabulary for mlm and lm. */
int tt_corpus_n_out(const tt_corpus *c);

/* One batch of fixed size. Rows past the end of the data are all padding. Targets are
 * TT_IGNORE_INDEX where nothing is predicted. */
typedef struct tt_batch {
    int B, T;
    int32_t *tokens;    /* [B,T] */
    int32_t *targets;   /* [B,T], or [B] for classify */
    int32_t *pad;       /* [B,T]: 1 = padding */
    uint8_t *ambiguous; /* [B,T]: 1 where the target belongs to an ambiguous word */
    int64_t n_tokens;   /* real (non-padding) input tokens */
    int part, parts;    /* data parallel: these B rows are share `part` of a whole batch of
                           B * parts rows (0 of 1, the default, on one process) */
} tt_batch;

void tt_batch_alloc(tt_batch *b, int B, int T);
void tt_batch_free(tt_batch *b);
/* Fills b with examples order[first .. first+B) of split s (order NULL: in file order); with
 * parts > 1, `first` is the whole batch's and b gets its share, order[first + part*B ..) .
 * mlm: each real token is replaced by [MASK] with probability mask_prob, drawn from `mask`
 * (element b*T+t of the cursor, b the row in the whole batch; the cursor advances by the whole
 * batch's B*parts*T), and becomes the target. */
void tt_batch_fill(tt_batch *b, const tt_corpus *c, const tt_split *s, const int *order,
                   int first, tt_rng *mask, double mask_prob);
/* order[0..n) = a permutation drawn from (seed, epoch): the same for a resumed run. */
void tt_shuffle(int *order, int n, uint64_t seed, int epoch);

#endif
