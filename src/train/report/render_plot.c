/* render_plot.c: tt_render_plot_svg, the line plots of the studies and of every run (loss.svg):
 * panels stacked over one x axis, one quantity per y axis, each panel's legend beside or below
 * its plotting area. Axes end where the data ends (plus 3%), ticks are thinned until their
 * labels do not touch, and a series hidden under a later one says so in the legend. Lines are
 * drawn from pixel polylines (dense series keep each pixel column's lowest and highest point);
 * the same polylines decide what lies under what. */
#include "train/report/render.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const tt_plot_palette[TT_PLOT_COLOURS] = {
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#B8A400"};

/* Layout in px: plotting area width, panel heights, margins; font 12 (ticks 11). */
enum { MAX_TICKS = 40, LEFT = 78, PW = 560, TOP = 40, GAP = 26, ROW = 18 };

typedef struct axis {
    tt_plot_scale scale;
    bool integer; /* every value an integer (epochs): no ticks between integers */
    double lo, hi; /* plot units: the value, log10 or log2 of it */
    double px0, px1; /* where lo and hi are drawn */
    double t[MAX_TICKS];
    int n;
} axis;

static double unit(tt_plot_scale s, double v)
{
    return s == TT_LOG10 ? log10(v) : s == TT_LOG2 ? log2(v) : v;
}

static bool usable(tt_plot_scale s, double v)
{
    return isfinite(v) && (s == TT_LINEAR || v > 0);
}

static double to_px(const axis *a, double v)
{
    return a->px0 + (unit(a->scale, v) - a->lo) / (a->hi - a->lo) * (a->px1 - a->px0);
}

/* The range of the usable values min..max, 3% wider on each side; one value (or none) gets a
 * unit, a decade or an octave around it. */
static void axis_range(axis *a, double mn, double mx)
{
    if (!(mn <= mx)) mn = mx = a->scale == TT_LINEAR ? 0 : 1;
    double lo = unit(a->scale, mn), hi = unit(a->scale, mx);
    if (hi - lo <= 1e-9 * fmax(1, fabs(hi))) {
        double h = a->scale == TT_LINEAR ? fmax(fabs(lo) / 2, 0.5) : 0.5;
        lo -= h, hi += h;
    }
    a->lo = lo - 0.03 * (hi - lo), a->hi = hi + 0.03 * (hi - lo);
}

static void tick_label(const axis *a, double u, char *buf, size_t n)
{
    double v = a->scale == TT_LOG10 ? pow(10, u) : a->scale == TT_LOG2 ? exp2(u) : u;
    if (a->scale == TT_LOG2 && fabs(u) > 16.5) {
        snprintf(buf, n, "2^%d", (int)lround(u));
    } else if (a->scale == TT_LOG10 && (v >= 1e5 || v < 1e-3)) {
        int k = (int)floor(u + 1e-9);
        double m = v / pow(10, k);
        if (fabs(m - 1) < 1e-6)
            snprintf(buf, n, "1e%d", k);
        else
            snprintf(buf, n, "%.0fe%d", m, k);
    } else {
        snprintf(buf, n, "%.6g", v);
    }
}

/* Tick candidates at a level of detail (0 the finest): linear, 1-2-5 steps for about
 * 10, 8, 6, 5, 4, 3 or 2 ticks; log10, mantissas 1..9, then 1, 2, 5, then decades 1, 2, 4...
 * apart; log2, octaves 1, 2, 3... apart. False when the level is past the coarsest. */
static bool ticks_at(axis *a, int level)
{
    static const int want[7] = {10, 8, 6, 5, 4, 3, 2};
    a->n = 0;
    if (a->scale == TT_LINEAR) {
        if (level >= 7) return false;
        double raw = (a->hi - a->lo) / want[level], mag = pow(10, floor(log10(raw)));
        double r = raw / mag, step = mag * (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10);
        if (a->integer) step = fmax(step, 1);
        for (double k = ceil(a->lo / step); k * step <= a->hi && a->n < MAX_TICKS; k++)
            a->t[a->n++] = fabs(k) < 0.5 ? 0 : k * step;
        return true;
    }
    if (a->scale == TT_LOG2) {
        if (level >= 12) return false;
        for (double k = ceil(a->lo); k <= a->hi && a->n < MAX_TICKS; k += level + 1)
            a->t[a->n++] = k;
        return true;
    }
    if (level >= 8) return false;
    static const double all[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, some[3] = {1, 2, 5};
    const double *m = level == 0 ? all : some;
    int n_m = level == 0 ? 9 : level == 1 ? 3 : 1, every = level < 2 ? 1 : 1 << (level - 2);
    for (double k = floor(a->lo); k <= a->hi && a->n < MAX_TICKS; k += every)
        for (int i = 0; i < n_m && a->n < MAX_TICKS; i++) {
            double u = k + log10(m[i]);
            if (u >= a->lo && u <= a->hi) a->t[a->n++] = u;
        }
    return true;
}

/* Do neighbouring tick labels touch? x: labels centred under their ticks; y: stacked. */
static bool crowded(const axis *a, bool vertical)
{
    char l0[32], l1[32];
    for (int i = 1; i < a->n; i++) {
        double d = fabs((a->t[i] - a->t[i - 1]) / (a->hi - a->lo) * (a->px1 - a->px0));
        tick_label(a, a->t[i - 1], l0, sizeof l0);
        tick_label(a, a->t[i], l1, sizeof l1);
        double need = vertical ? 16
                               : (tt_render_text_px(l0, 11) + tt_render_text_px(l1, 11)) / 2 + 8;
        if (d < need) return true;
    }
    return false;
}

/* The finest ticks, at most max_n, whose labels do not touch; none when nothing fits. */
static void axis_ticks(axis *a, bool vertical, int max_n)
{
    for (int level = 0; ticks_at(a, level); level++)
        if (a->n <= max_n && !crowded(a, vertical)) return;
    a->n = 0;
}

/* A series as pixels: pt[i] with pen[i] false where the line starts again after a gap. */
typedef struct poly {
    double *x, *y;
    bool *pen;
    int n;
} poly;

/* Points of one pixel column, collapsed to its lowest and highest in the order they came. */
typedef struct column {
    int n;
    bool pen;
    double x, y_lo, y_hi;
    int i_lo, i_hi;
} column;

static void column_flush(poly *p, column *c)
{
    if (!c->n) return;
    bool lo_first = c->i_lo <= c->i_hi;
    p->x[p->n] = c->x, p->y[p->n] = lo_first ? c->y_lo : c->y_hi, p->pen[p->n++] = c->pen;
    if (c->i_lo != c->i_hi)
        p->x[p->n] = c->x, p->y[p->n] = lo_first ? c->y_hi : c->y_lo, p->pen[p->n++] = true;
    c->n = 0;
}

static poly poly_of(const tt_plot_series *s, const axis *ax, const axis *ay)
{
    poly p = {tt_xmalloc((size_t)(s->n + 1) * sizeof(double)),
              tt_xmalloc((size_t)(s->n + 1) * sizeof(double)),
              tt_xmalloc((size_t)(s->n + 1) * sizeof(bool)), 0};
    column c = {0};
    bool pen = false;
    for (int i = 0; i < s->n; i++) {
        bool ok = usable(ax->scale, s->x[i]) && usable(ay->scale, s->y[i]);
        double x = ok ? to_px(ax, s->x[i]) : 0, y = ok ? to_px(ay, s->y[i]) : 0;
        if (c.n && (!ok || floor(x) != floor(c.x))) column_flush(&p, &c);
        pen = pen && ok;
        if (!ok) continue;
        if (!c.n)
            c = (column){0, pen, x, y, y, i, i};
        if (y < c.y_lo) c.y_lo = y, c.i_lo = i;
        if (y > c.y_hi) c.y_hi = y, c.i_hi = i;
        c.n++;
        pen = true;
    }
    column_flush(&p, &c);
    return p;
}

static void poly_free(poly *p)
{
    free(p->x);
    free(p->y);
    free(p->pen);
}

static double seg_dist(double px, double py, double x0, double y0, double x1, double y1)
{
    double dx = x1 - x0, dy = y1 - y0, l2 = dx * dx + dy * dy;
    double t = l2 > 0 ? fmax(0, fmin(1, ((px - x0) * dx + (py - y0) * dy) / l2)) : 0;
    return hypot(px - (x0 + t * dx), py - (y0 + t * dy));
}

/* Every point of a within 2 px of b's line (or of one of b's points, for markers alone). */
static bool lies_under(const poly *a, const poly *b, bool b_markers_only)
{
    if (!a->n || !b->n) return false;
    for (int i = 0; i < a->n; i++) {
        bool near = false;
        for (int j = 0; j < b->n && !near; j++) {
            bool seg = !b_markers_only && j + 1 < b->n && b->pen[j + 1];
            double d = seg ? seg_dist(a->x[i], a->y[i], b->x[j], b->y[j], b->x[j + 1],
                                      b->y[j + 1])
                           : hypot(a->x[i] - b->x[j], a->y[i] - b->y[j]);
            near = d <= 2;
        }
        if (!near) return false;
    }
    return true;
}

static const char *colour_of(const tt_plot_series *s, int k)
{
    return s->colour ? s->colour : tt_plot_palette[k % TT_PLOT_COLOURS];
}

static bool has_line(tt_plot_style st)
{
    return st != TT_PLOT_MARKERS;
}

static bool has_markers(tt_plot_style st)
{
    return st == TT_PLOT_LINE_MARKERS || st == TT_PLOT_MARKERS;
}

static const char *stroke_attrs(tt_plot_style st)
{
    return st == TT_PLOT_THIN     ? "stroke-width=\"1\" stroke-opacity=\"0.45\""
           : st == TT_PLOT_DASHED ? "stroke-width=\"1.5\" stroke-dasharray=\"6 4\""
                                  : "stroke-width=\"2\"";
}

/* The band lo..hi of a series as one closed path (points with an unusable bound left out). */
static void put_band(FILE *f, const tt_plot_series *s, const char *c, const axis *ax,
                     const axis *ay)
{
    bool any = false;
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < s->n; k++) {
            int i = pass ? s->n - 1 - k : k;
            const double v = pass ? s->lo[i] : s->hi[i];
            if (!usable(ax->scale, s->x[i]) || !usable(ay->scale, s->lo[i]) ||
                !usable(ay->scale, s->hi[i]))
                continue;
            if (!any) fprintf(f, "<path class=\"band\" fill=\"%s\" fill-opacity=\"0.2\" d=\"", c);
            fprintf(f, "%s%.1f %.1f", any ? " L" : "M", to_px(ax, s->x[i]), to_px(ay, v));
            any = true;
        }
    if (any) fputs(" Z\"/>\n", f);
}

static void put_series(FILE *f, const tt_plot_series *s, const poly *p, const char *c,
                       const axis *ax, const axis *ay)
{
    fputs("<g class=\"series\">\n", f);
    if (has_line(s->style) && p->n) {
        fprintf(f, "<path fill=\"none\" stroke=\"%s\" %s stroke-linejoin=\"round\" d=\"", c,
                stroke_attrs(s->style));
        for (int i = 0; i < p->n; i++)
            fprintf(f, "%s%.1f %.1f", i == 0 ? "M" : p->pen[i] ? " L" : " M", p->x[i], p->y[i]);
        fputs("\"/>\n", f);
    }
    if (has_markers(s->style))
        for (int i = 0; i < s->n; i++)
            if (usable(ax->scale, s->x[i]) && usable(ay->scale, s->y[i]))
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                        to_px(ax, s->x[i]), to_px(ay, s->y[i]), c);
    fputs("</g>\n", f);
}

/* The legend entry's text: the name, and "(under NAME)" when a later series hides it. */
static void legend_text(const tt_plot_panel *pn, int k, const int *under, char *buf, size_t n)
{
    const char *name = pn->s[k].name ? pn->s[k].name : "";
    if (under[k] >= 0)
        snprintf(buf, n, "%s (under %s)", name, pn->s[under[k]].name ? pn->s[under[k]].name : "");
    else
        snprintf(buf, n, "%s", name);
}

static void put_legend(FILE *f, const tt_plot_panel *pn, const int *under, double x, double y,
                       double w)
{
    char text[512];
    fprintf(f, "<g class=\"legend\">\n<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%d\" "
            "fill=\"white\" stroke=\"#bbb\"/>\n", x, y, w, pn->n * ROW + 8);
    for (int k = 0; k < pn->n; k++) {
        const tt_plot_series *s = &pn->s[k];
        const char *c = colour_of(s, k);
        double yy = y + 4 + ROW * (k + 0.5);
        if (s->lo && s->hi)
            fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"24\" height=\"10\" fill=\"%s\" "
                    "fill-opacity=\"0.2\"/>", x + 6, yy - 5, c);
        if (has_line(s->style))
            fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" %s/>",
                    x + 6, yy, x + 30, yy, c, stroke_attrs(s->style));
        if (has_markers(s->style))
            fprintf(f, "<circle cx=\"%.0f\" cy=\"%.0f\" r=\"3\" fill=\"%s\"/>", x + 18, yy, c);
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" dominant-baseline=\"middle\">", x + 36, yy);
        legend_text(pn, k, under, text, sizeof text);
        tt_render_xml_puts(f, text);
        fputs("</text>\n", f);
    }
    fputs("</g>\n", f);
}

static void put_grid(FILE *f, const axis *ax, const axis *ay, bool x_labels)
{
    char lab[32];
    fputs("<g class=\"grid\" stroke=\"#e6e6e6\">\n", f);
    for (int i = 0; i < ax->n; i++) {
        double x = ax->px0 + (ax->t[i] - ax->lo) / (ax->hi - ax->lo) * (ax->px1 - ax->px0);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x, ay->px1, x,
                ay->px0 + (x_labels ? 5 : 0));
        tick_label(ax, ax->t[i], lab, sizeof lab);
        if (x_labels)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" stroke=\"none\" "
                    "fill=\"#333\" font-size=\"11\">%s</text>", x, ay->px0 + 18, lab);
        fputc('\n', f);
    }
    for (int i = 0; i < ay->n; i++) {
        double y = ay->px0 + (ay->t[i] - ay->lo) / (ay->hi - ay->lo) * (ay->px1 - ay->px0);
        tick_label(ay, ay->t[i], lab, sizeof lab);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/><text x=\"%.1f\" "
                "y=\"%.1f\" text-anchor=\"end\" dominant-baseline=\"middle\" stroke=\"none\" "
                "fill=\"#333\" font-size=\"11\">%s</text>\n", ax->px0 - 5, y, ax->px1, y,
                ax->px0 - 8, y, lab);
    }
    fputs("</g>\n", f);
}

/* The x range over every panel (want_x), or one panel's y range (bands included); *integer
 * stays true while every value is an integer. */
static void data_range(const tt_plot_panel *pn, tt_plot_scale xs, tt_plot_scale ys, bool want_x,
                       double *mn, double *mx, bool *integer)
{
    for (int k = 0; k < pn->n; k++) {
        const tt_plot_series *s = &pn->s[k];
        for (int i = 0; i < s->n; i++) {
            if (!usable(xs, s->x[i])) continue;
            const double v[3] = {s->y[i], s->lo ? s->lo[i] : (double)NAN,
                                 s->hi ? s->hi[i] : (double)NAN};
            for (int j = 0; j < 3; j++)
                if (usable(ys, v[j])) {
                    double d = want_x ? s->x[i] : v[j];
                    *mn = fmin(*mn, d), *mx = fmax(*mx, d);
                    *integer = *integer && d == floor(d);
                }
        }
    }
}

/* One panel laid out: its place, y axis, pixel lines, which series hides which, and where its
 * legend goes (none when the panel above says the same). */
typedef struct panel_fit {
    double top, h;
    axis ay;
    poly *p;
    int *under; /* the topmost later series that hides series k, or -1 */
    bool legend;
    double lx, ly;
} panel_fit;

static panel_fit fit_panel(const tt_plot_panel *pn, const axis *ax, double top, double h)
{
    panel_fit g = {top, h, {.scale = pn->yscale, .integer = true, .px0 = top + h, .px1 = top},
                   NULL, NULL, pn->n > 0, 0, 0};
    double y0 = INFINITY, y1 = -INFINITY;
    data_range(pn, ax->scale, pn->yscale, false, &y0, &y1, &g.ay.integer);
    axis_range(&g.ay, y0, y1);
    axis_ticks(&g.ay, true, 8);
    g.p = tt_xcalloc((size_t)pn->n + 1, sizeof *g.p);
    g.under = tt_xmalloc(((size_t)pn->n + 1) * sizeof *g.under);
    for (int k = 0; k < pn->n; k++) g.p[k] = poly_of(&pn->s[k], ax, &g.ay);
    for (int k = 0; k < pn->n; k++) {
        g.under[k] = -1;
        for (int j = pn->n - 1; j > k && g.under[k] < 0; j--)
            if (lies_under(&g.p[k], &g.p[j], !has_line(pn->s[j].style))) g.under[k] = j;
    }
    return g;
}

/* The same entries as the panel above (names, styles, colours, no "under" notes). */
static bool same_legend(const tt_plot_panel *a, const panel_fit *ga, const tt_plot_panel *b,
                        const panel_fit *gb)
{
    if (a->n != b->n) return false;
    for (int k = 0; k < a->n; k++) {
        const tt_plot_series *x = &a->s[k], *y = &b->s[k];
        if (strcmp(x->name ? x->name : "", y->name ? y->name : "") || x->style != y->style ||
            strcmp(colour_of(x, k), colour_of(y, k)) || !x->lo != !y->lo || ga->under[k] >= 0 ||
            gb->under[k] >= 0)
            return false;
    }
    return true;
}

static void put_panel(FILE *f, const tt_plot_panel *pn, const axis *ax, const panel_fit *g,
                      double legend_w, bool bottom)
{
    fputs("<g class=\"panel\">\n", f);
    fprintf(f, "<text transform=\"translate(18,%.0f) rotate(-90)\" text-anchor=\"middle\">",
            g->top + g->h / 2);
    tt_render_xml_puts(f, pn->ylabel ? pn->ylabel : "");
    fprintf(f, "%s</text>\n", pn->yscale == TT_LINEAR ? "" : " (log scale)");
    put_grid(f, ax, &g->ay, bottom);
    fprintf(f, "<rect class=\"frame\" x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
            "fill=\"none\" stroke=\"#333\"/>\n", ax->px0, g->top, ax->px1 - ax->px0, g->h);
    for (int k = 0; k < pn->n; k++)
        if (pn->s[k].lo && pn->s[k].hi)
            put_band(f, &pn->s[k], colour_of(&pn->s[k], k), ax, &g->ay);
    for (int k = 0; k < pn->n; k++)
        put_series(f, &pn->s[k], &g->p[k], colour_of(&pn->s[k], k), ax, &g->ay);
    if (g->legend) put_legend(f, pn, g->under, g->lx, g->ly, legend_w);
    fputs("</g>\n", f);
}

/* Every panel's place and legend, top to bottom, and the figure's size; returns the legends'
 * width. */
static double lay_out(const tt_plot *p, const axis *ax, panel_fit *g, double *width,
                      double *height)
{
    const double ph = p->n_panels > 1 ? 210 : 280, pw = ax->px1 - ax->px0;
    double top = TOP, legend_w = 0, bottom_edge = TOP;
    char text[512];
    for (int q = 0; q < p->n_panels; q++) {
        const tt_plot_panel *pn = &p->panel[q];
        g[q] = fit_panel(pn, ax, top, p->legend_below ? ph : fmax(ph, pn->n * ROW + 8));
        if (q && same_legend(&p->panel[q - 1], &g[q - 1], pn, &g[q])) g[q].legend = false;
        for (int k = 0; g[q].legend && k < pn->n; k++) {
            legend_text(pn, k, g[q].under, text, sizeof text);
            legend_w = fmax(legend_w, 44 + tt_render_text_px(text, 12));
        }
        double after = top + g[q].h;
        if (q == p->n_panels - 1) after += 38; /* tick labels, the x axis' label */
        g[q].lx = p->legend_below ? LEFT : LEFT + pw + 14;
        g[q].ly = p->legend_below ? after + 8 : top;
        if (p->legend_below && g[q].legend) after = g[q].ly + pn->n * ROW + 8;
        bottom_edge = fmax(after, g[q].legend ? g[q].ly + pn->n * ROW + 8 : 0);
        top = after + GAP;
    }
    *width = LEFT + (p->legend_below ? fmax(pw, legend_w) : pw + (legend_w ? 14 + legend_w : 0));
    *width = fmax(*width, LEFT + tt_render_text_px(p->title ? p->title : "", 15)) + 12;
    *height = bottom_edge + 12;
    return legend_w;
}

int tt_render_plot_svg(const char *path, const tt_plot *p, char *err, size_t errlen)
{
    const double pw = p->plot_width > 0 ? p->plot_width : PW;
    axis ax = {.scale = p->xscale, .integer = true, .px0 = LEFT, .px1 = LEFT + pw};
    double x0 = INFINITY, x1 = -INFINITY, width, height;
    for (int q = 0; q < p->n_panels; q++)
        data_range(&p->panel[q], p->xscale, p->panel[q].yscale, true, &x0, &x1, &ax.integer);
    axis_range(&ax, x0, x1);
    axis_ticks(&ax, false, p->xscale == TT_LOG2 ? 6 : 12); /* d_k: 4, 16, 64, 256, 1024 */
    panel_fit *g = tt_xcalloc((size_t)p->n_panels + 1, sizeof *g);
    const double legend_w = lay_out(p, &ax, g, &width, &height);
    tt_atomic_file o;
    int rc = tt_atomic_open(&o, path, err, errlen);
    if (!rc) {
        FILE *f = o.f;
        fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "
                "xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n<rect "
                "width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%d\" y=\"24\" "
                "font-size=\"15\" font-weight=\"bold\">", width, height, width, height, LEFT);
        tt_render_xml_puts(f, p->title ? p->title : "");
        fputs("</text>\n", f);
        for (int q = 0; q < p->n_panels; q++)
            put_panel(f, &p->panel[q], &ax, &g[q], legend_w, q == p->n_panels - 1);
        double xlabel_y = p->n_panels ? g[p->n_panels - 1].top + g[p->n_panels - 1].h + 38 : TOP;
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">", LEFT + pw / 2,
                xlabel_y);
        tt_render_xml_puts(f, p->xlabel ? p->xlabel : "");
        fprintf(f, "%s</text>\n</svg>\n", p->xscale == TT_LINEAR ? "" : " (log scale)");
        rc = tt_atomic_close(&o, true, err, errlen);
    }
    for (int q = 0; q < p->n_panels; q++) {
        for (int k = 0; k < p->panel[q].n; k++) poly_free(&g[q].p[k]);
        free(g[q].p);
        free(g[q].under);
    }
    free(g);
    return rc;
}
