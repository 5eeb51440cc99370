/* maps.h: the probe sentences' attention maps of one epoch, in memory and on disk, and the
 * numbers every view of them shows (maps.c). An attention dump is
 * RUN/attention/epoch_NNN.json (BertViz head_view layout):
 *   {"epoch": 3, "layers": L, "heads": H, "causal": false,
 *    "probes": [{"text": "...", "tokens": [T strings],
 *                "attention": [L arrays, each [1][H][T][T]: batch 1, head, query row, key
 *                              column]}]}
 * "causal" (optional when read, false when absent) says that query i saw keys 0..i only, so
 * a uniform row i has i + 1 keys. A probe's map holds its own tokens only (no padding).
 * Layers and heads are numbered from 0 everywhere (files, SVG titles, the viewer, the
 * terminal). Writers are atomic; failures return -1 with "PATH: what" in err. */
#ifndef TT_MAPS_H
#define TT_MAPS_H

#include "tensor/common.h"
#include "tensor/real.h"

#include <stdbool.h>
#include <stdio.h>

/* One probe sentence: text, its T tokens and w[L][H][T][T] (row = query, column = key). The
 * strings and w are malloc'ed and owned by the epoch. */
/* A number as JSON: v printed with fmt (one %g or %f conversion) into out (TT_JSON_NUM
 * bytes), or null when v is not finite (JSON has no inf or NaN), so that every line and file
 * the program writes parses. Returns out. */
#define TT_JSON_NUM 40
const char *tt_json_num(char *out, const char *fmt, double v);

typedef struct tt_attn_probe {
    char *text;
    int T;
    char **tokens;
    real *w;
} tt_attn_probe;

typedef struct tt_attn_epoch {
    int epoch, L, H, n_probes;
    bool causal;           /* the model's causal mask: row i's keys are 0..i */
    tt_attn_probe *probes; /* malloc'ed, n_probes of them */
} tt_attn_epoch;

/* Parses and validates an epoch file: keys present, integers where integers go, attention of
 * shape L x 1 x H x T x T with T the number of tokens, every weight a number in [0, 1], UTF-8
 * strings. On failure *e is left empty (safe to free) and err names the file and JSON path. */
int tt_attn_epoch_read(tt_attn_epoch *e, const char *path, char *err, size_t errlen);
/* The JSON above, weights with %.6g, one head's map per line. Probes need T >= 1. */
int tt_attn_epoch_write(const tt_attn_epoch *e, const char *path, char *err, size_t errlen);
/* Frees everything the epoch owns and zeroes it; a zeroed epoch is fine. */
/* The file's text, NUL-terminated and malloc'ed, or NULL with err filled. */
char *tt_render_slurp(const char *path, char *err, size_t errlen);
/* tt_attn_epoch_read on text already read from path (named in messages). */
int tt_attn_epoch_parse(tt_attn_epoch *e, const char *text, const char *path, char *err,
                        size_t errlen);
void tt_attn_epoch_free(tt_attn_epoch *e);

/* -sum p log p in nats (0 log 0 = 0): log T for a uniform row, 0 for a one-hot row. */
double tt_attn_row_entropy(const real *row, int T);
/* What tt_attn_row_entropy averages to over a T x T map whose rows are uniform over the keys
 * they see: log T, or, causal, the mean of log(i + 1) over rows i = 0..T-1 (log(T!) / T). */
double tt_attn_uniform_entropy(int T, bool causal);
/* The mean row entropy of one probe's map at (layer l, head h). */
double tt_attn_mean_entropy(const tt_attn_epoch *e, int probe, int l, int h);
/* The (layer, head) with the lowest mean row entropy for the probe (the first on ties). */
int tt_attn_most_focused(const tt_attn_epoch *e, int probe, int *layer, int *head);

#endif
