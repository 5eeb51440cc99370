/* render.h: what a run shows of itself: the probe sentences' attention maps (maps.h) rendered
 * as SVG, as one self-contained HTML viewer, and as text for the terminal, and the line plots
 * of the studies. Every writer is atomic (a temporary file, fflush, fsync, rename);
 * user-facing failures return -1 with "PATH: what" in err. render.c holds the text view and
 * the shared helpers; render_svg.c the heatmaps; render_plot.c the line plots; render_html.c
 * the viewer (index.html); loss_plot.c a run's loss.svg. */
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
 * heatmaps titled "layer l, head h", tokens on both axes, one 0..1 colour scale with a legend.
 * The picture's title is "Attention weights, epoch N", or the caller's (_titled). */
int tt_render_heatmap_svg(const tt_attn_epoch *e, const char *path, char *err, size_t errlen);
int tt_render_heatmap_svg_titled(const tt_attn_epoch *e, const char *title, const char *path,
                                 char *err, size_t errlen);

/* Reads every DIR/epoch_<digits>.json (a malformed one is an error, naming it) and writes
 * DIR/index.html: one offline page, the epochs embedded as
 * <script type="application/json" id="tt-data">{"epochs":[...]}</script>, with an epoch slider
 * and play button, layer/head/probe selectors, the heatmap with hover values, an overview of all
 * heads and each head's entropy over the epochs, and the run's loss curves: DIR/../loss.svg
 * (loss_plot.c) embedded as inline SVG when it exists. When it has rendered, the page sets
 * document.body.dataset.ttReady = "1"; a script error sets dataset.ttError to the message. */
int tt_render_index_html(const char *attention_dir, char *err, size_t errlen);
/* The same with the epoch files that listed(DIR, NAME) accepts only (a run's: the files its
 * record lists, so a file of the user's named like one is never read). */
int tt_render_index_html_of(const char *attention_dir, bool (*listed)(const char *, const char *),
                            char *err, size_t errlen);

/* ---- line plots (render_plot.c) ---- */

typedef enum tt_plot_scale { TT_LINEAR, TT_LOG10, TT_LOG2 } tt_plot_scale;
typedef enum tt_plot_style {
    TT_PLOT_LINE_MARKERS, /* a 2 px line and a marker per point (the default) */
    TT_PLOT_LINE,         /* a 2 px line, no markers: dense series */
    TT_PLOT_THIN,         /* a 1 px line, half transparent: raw values under their means */
    TT_PLOT_MARKERS,      /* markers only */
    TT_PLOT_DASHED        /* a dashed line: a reference (a theory, a uniform row) */
} tt_plot_style;

/* One series: n points of x and y (the caller's arrays); lo and hi, when not NULL, a band
 * drawn under the line (a spread over seeds); colour "#rrggbb", NULL for the palette's colour
 * of the series' place in its panel. */
typedef struct tt_plot_series {
    const char *name;
    int n;
    const double *x, *y;
    const double *lo, *hi;
    tt_plot_style style;
    const char *colour;
} tt_plot_series;

/* One y axis (one quantity) and its series, drawn in order (a later one over an earlier). */
typedef struct tt_plot_panel {
    const char *ylabel;
    tt_plot_scale yscale;
    const tt_plot_series *s;
    int n;
} tt_plot_panel;

/* Panels stacked over one x axis; the plotting area plot_width px wide (0: 560), each legend
 * to the right of its panel, or below it (legend_below: a narrow figure). */
typedef struct tt_plot {
    const char *title, *xlabel;
    tt_plot_scale xscale;
    const tt_plot_panel *panel;
    int n_panels;
    double plot_width;
    bool legend_below;
} tt_plot;

/* Okabe-Ito: told apart with the common colour-vision deficiencies. */
#define TT_PLOT_COLOURS 8
extern const char *const tt_plot_palette[TT_PLOT_COLOURS];

/* A standalone SVG (no id attributes, so it can be inlined in a page): each panel's plotting
 * area with ticks and grid lines, its legend outside that area (never over the data; left out
 * when the panel above shows the same entries).
 * Axes span the data (bands included) plus 3% on each side; ticks are 1-2-5 steps (linear),
 * decades or 1-2-5 within them (TT_LOG10), powers of two (TT_LOG2), thinned until their labels
 * do not touch. Points that are not finite, or not positive on a log axis, are left out (a line
 * breaks there). A series every point of which lies within 2 px of a later series' line is
 * hidden by it: its legend entry says "(under NAME)". Dense lines keep the lowest and highest
 * point of each pixel column. */
int tt_render_plot_svg(const char *path, const tt_plot *p, char *err, size_t errlen);

/* loss_plot.c: the loss curves of a run from its metrics.jsonl (every line read back; one that
 * is not a JSON object with "step" is an error naming the file and line): panel (a) the loss
 * against the optimizer step (each logged step thin, each epoch's mean at its middle step, the
 * validation loss of every evaluation line, step 0 before training), panel (b) the validation
 * accuracy (and valid_acc_ambiguous when present). 0, or -1 with err. */
int tt_loss_plot_svg(const char *metrics_path, const char *svg_path, const char *title,
                     char *err, size_t errlen);
/* RUN_DIR/loss.svg from RUN_DIR/metrics.jsonl, after every evaluation line of a run; 0, or -1
 * with err: like every output, a plot that cannot be written ends the run (exit status 2). */
int tt_loss_plot_update(const char *run_dir, char *err, size_t errlen);

/* Shared by render.c, render_svg.c, render_html.c and tests/test_render.c; not for other
 * callers. */
/* s with & < > " ' as entities; bytes that are not UTF-8 or XML characters become '?'. */
void tt_render_xml_puts(FILE *f, const char *s);
/* The estimated width in px of s at a font size: no font metrics in C, so 0.55 em per ASCII
 * character and 1.1 em per Hangul or CJK one. */
double tt_render_text_px(const char *s, double font_px);
/* The colour ramp (ColorBrewer Blues, white to dark blue): TT_RAMP_N RGB stops, interpolated
 * linearly; tt_render_color writes "#rrggbb" for a weight in [0, 1] (clamped). */
#define TT_RAMP_N 9
extern const unsigned char tt_render_ramp[TT_RAMP_N][3];
void tt_render_color(double w, char hex[8]);

#endif
