/* svg_testutil.h: what the suites that read the renderers' markup share (test_render.c,
 * test_plot.c): an XML well-formedness check, and readers for the line plots' SVG (each
 * panel's frame, tick labels, markers and legend box), so a test can ask where a number was
 * drawn and compare it with where the axes say it belongs. */
#ifndef TT_SVG_TESTUTIL_H
#define TT_SVG_TESTUTIL_H

#include <stdbool.h>

/* Minimal XML well-formedness: tags nest and close, attributes are quoted, and neither text nor
 * attributes hold a raw '<', a raw '>' or an '&' that starts no known entity. NULL when fine,
 * else what is wrong and where (a static buffer). */
const char *tt_svg_xml_problem(const char *s);

/* Occurrences of what in s. */
int tt_svg_count(const char *s, const char *what);

/* A rectangle of the markup. */
typedef struct tt_svg_box {
    double x, y, w, h;
} tt_svg_box;

/* One panel of a line plot (render_plot.c): the text from its <g class="panel"> to the next. */
typedef struct tt_svg_panel {
    const char *at, *end;
} tt_svg_panel;
/* The panels of a plot, in order; returns how many (at most max). */
int tt_svg_panels(const char *svg, tt_svg_panel *p, int max);
/* The panel's plotting area (class "frame"); fails the test when there is none. */
tt_svg_box tt_svg_frame(tt_svg_panel p);
/* The panel's legend box; false when the panel has no legend. */
bool tt_svg_legend(tt_svg_panel p, tt_svg_box *b);

/* A tick label: where it is drawn (x for the x axis, y for a y axis) and its value. */
typedef struct tt_svg_tick {
    double px, value;
    char label[32];
} tt_svg_tick;
/* The panel's x-axis (x true) or y-axis tick labels; returns how many (at most max). */
int tt_svg_ticks(tt_svg_panel p, bool x, tt_svg_tick *t, int max);
/* The pixel of value v on an axis, from its first and last tick labels (log: by log10). */
double tt_svg_px_of(const tt_svg_tick *t, int n, bool log, double v);
/* Is there a marker (circle) of colour fill within tol px of (x, y) in the panel? */
bool tt_svg_marker_at(tt_svg_panel p, double x, double y, const char *fill, double tol);

#endif
