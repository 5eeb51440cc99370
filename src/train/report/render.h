/* render.h: what a run shows of itself: the probe sentences' attention maps (maps.h) rendered
 * as SVG, as one self-contained HTML viewer, and as text for the terminal, and the line plots
 * of the studies. Every writer is atomic (a temporary file, fflush, fsync, rename);
 * user-facing failures return -1 with "PATH: what" in err. render.c holds the text view and
 * the shared helpers; render_svg.c the SVG; render_html.c the viewer (index.html). */
#ifndef TT_RENDER_H
#define TT_RENDER_H

#include "train/report/maps.h"

#include <stdbool.h>
#include <stdio.h>

/* One map as text: tokens down the side and (vertically) across the top, cut to 6 display
 * columns (Hangul and CJK count 2), each weight 2 characters of " ░▒▓█" by fifths of [0, 1]
 * inside a | frame, then the mean row entropy and a legend line. */
void tt_render_terminal(FILE *out, const tt_attn_epoch *e, int probe, int layer, int head);

/* One standalone SVG per epoch: per probe (stacked, headed by its text) an L x H grid of T x T
 * heatmaps titled "layer l, head h", tokens on both axes, one 0..1 colour scale with a legend. */
int tt_render_heatmap_svg(const tt_attn_epoch *e, const char *path, char *err, size_t errlen);

/* Reads every DIR/epoch_<digits>.json (a malformed one is an error, naming it) and writes
 * DIR/index.html: one offline page, the epochs embedded as
 * <script type="application/json" id="tt-data">{"epochs":[...]}</script>, with an epoch slider
 * and play button, layer/head/probe selectors, the heatmap with hover values, an overview of all
 * heads and each head's entropy over the epochs. When it has rendered, the page sets
 * document.body.dataset.ttReady = "1"; a script error sets dataset.ttError to the message. */
int tt_render_index_html(const char *attention_dir, char *err, size_t errlen);

/* A line plot: n points of x and y (the caller's arrays). */
typedef struct tt_plot_series {
    const char *name;
    int n;
    const double *x, *y;
} tt_plot_series;

/* Axes with ticks (powers of 10, or of 2 over short ranges, on log axes), grid lines, one <path>
 * per series with markers, a legend. Points that are not finite, or not positive on a log axis,
 * are left out (the line breaks there). */
int tt_render_lineplot_svg(const char *path, const char *title, const char *xlabel,
                           const char *ylabel, bool log_x, bool log_y, const tt_plot_series *s,
                           int n_series, char *err, size_t errlen);

/* Shared by render.c, render_svg.c, render_html.c and tests/test_render.c; not for other
 * callers. */
/* Calls put(f, s, n) for each well-formed UTF-8 run of s, writing '?' for each bad byte. */
void tt_render_utf8_runs(FILE *f, const char *s, void (*put)(FILE *, const char *, size_t));
/* s with & < > " ' as entities; bytes that are not UTF-8 or XML characters become '?'. */
void tt_render_xml_puts(FILE *f, const char *s);
/* The file's text, NUL-terminated and malloc'ed, or NULL with err filled. */
char *tt_render_slurp(const char *path, char *err, size_t errlen);
/* tt_attn_epoch_read on text already read from path (named in messages). */
int tt_attn_epoch_parse(tt_attn_epoch *e, const char *text, const char *path, char *err,
                        size_t errlen);
/* The colour ramp (ColorBrewer Blues, white to dark blue): TT_RAMP_N RGB stops, interpolated
 * linearly; tt_render_color writes "#rrggbb" for a weight in [0, 1] (clamped). */
#define TT_RAMP_N 9
extern const unsigned char tt_render_ramp[TT_RAMP_N][3];
void tt_render_color(double w, char hex[8]);

#endif
