/* render_svg.c: the SVG views. tt_render_heatmap_svg draws one epoch's maps as a standalone SVG
 * (probes stacked, an L x H grid of heatmaps each, one colour scale); tt_render_lineplot_svg the
 * studies' line plots (linear or log axes). Text sizes are estimated (no font metrics in C):
 * 7 px per narrow character, 12 per wide one at 11 px. */
#include "train/report/render.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Estimated width in px at font-size 11: 3- and 4-byte UTF-8 characters (Hangul, CJK) are wide. */
static double text_px(const char *s)
{
    double w = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        w += *p < 0x80 ? 6.6 : *p >= 0xE0 ? 12 : *p >= 0xC0 ? 7 : 0;
    return w;
}

/* ---- the heatmap SVG ---- */

typedef struct hm_layout {
    double lab, cs, panel_w, panel_h; /* label band, cell size, one head's panel */
} hm_layout;

static hm_layout hm_layout_of(const tt_attn_probe *pr)
{
    hm_layout g = {.lab = 24};
    for (int t = 0; t < pr->T; t++)
        g.lab = fmax(g.lab, text_px(pr->tokens[t]) + 8);
    g.cs = fmin(28, fmax(10, floor(200.0 / pr->T)));
    g.panel_w = g.lab + pr->T * g.cs + 28;
    g.panel_h = 20 + g.lab + pr->T * g.cs + 24;
    return g;
}

static void hm_panel(FILE *f, const tt_attn_epoch *e, const tt_attn_probe *pr, int l, int h,
                     double px, double py, hm_layout g)
{
    const int T = pr->T;
    const double mx = px + g.lab, my = py + 20 + g.lab;
    fprintf(f,
            "<g class=\"cell\">\n<text class=\"cell-title\" x=\"%.1f\" y=\"%.1f\" "
            "text-anchor=\"middle\" font-weight=\"bold\">layer %d, head %d</text>\n",
            mx + T * g.cs / 2, py + 13, l, h);
    for (int j = 0; j < T; j++) {
        fprintf(f,
                "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" "
                "dominant-baseline=\"middle\">",
                mx + (j + 0.5) * g.cs, my - 4);
        tt_render_xml_puts(f, pr->tokens[j]);
        fputs("</text>\n", f);
    }
    for (int i = 0; i < T; i++) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" dominant-baseline=\"middle\">",
                mx - 4, my + (i + 0.5) * g.cs);
        tt_render_xml_puts(f, pr->tokens[i]);
        fputs("</text>\n", f);
    }
    const real *m = pr->w + ((size_t)l * e->H + h) * T * T;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            double w = (double)m[(size_t)i * T + j];
            char hex[8];
            tt_render_color(w, hex);
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
                    "<title>",
                    mx + j * g.cs, my + i * g.cs, g.cs, g.cs, hex);
            tt_render_xml_puts(f, pr->tokens[i]);
            fputs(" -&gt; ", f);
            tt_render_xml_puts(f, pr->tokens[j]);
            fprintf(f, ": %.3f</title></rect>\n", w);
        }
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#888\"/>\n</g>\n",
            mx, my, T * g.cs, T * g.cs);
}

int tt_render_heatmap_svg(const tt_attn_epoch *e, const char *path, char *err, size_t errlen)
{
    const double margin = 16, top = 96;
    double width = 420, height = top;
    for (int p = 0; p < e->n_probes; p++) {
        hm_layout g = hm_layout_of(&e->probes[p]);
        width = fmax(width, 2 * margin + e->H * g.panel_w);
        height += 30 + e->L * g.panel_h;
    }
    tt_atomic_file o;
    if (tt_atomic_open(&o, path, err, errlen)) return -1;
    FILE *f = o.f;
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%.0f\" y=\"26\" font-size=\"18\" font-weight=\"bold\">Attention weights, "
            "epoch %d</text>\n<text x=\"%.0f\" y=\"44\" fill=\"#444\">rows: query tokens, "
            "columns: key tokens; each row sums to 1; layers and heads from 0</text>\n",
            width, height, width, height, margin, e->epoch, margin);
    /* the legend: the ramp as a gradient with ticks */
    fputs("<g id=\"legend\">\n<defs><linearGradient id=\"ramp\">", f);
    for (int k = 0; k < TT_RAMP_N; k++)
        fprintf(f, "<stop offset=\"%.4f\" stop-color=\"#%02x%02x%02x\"/>", k / (TT_RAMP_N - 1.0),
                tt_render_ramp[k][0], tt_render_ramp[k][1], tt_render_ramp[k][2]);
    fprintf(f,
            "</linearGradient></defs>\n<text x=\"%.0f\" y=\"62\">attention weight</text>\n"
            "<rect x=\"%.0f\" y=\"66\" width=\"200\" height=\"10\" fill=\"url(#ramp)\" "
            "stroke=\"#888\"/>\n",
            margin, margin);
    for (int k = 0; k <= 4; k++)
        fprintf(f,
                "<line x1=\"%.0f\" y1=\"76\" x2=\"%.0f\" y2=\"80\" stroke=\"#444\"/><text "
                "x=\"%.0f\" y=\"90\" text-anchor=\"middle\">%g</text>\n",
                margin + 50 * k, margin + 50 * k, margin + 50 * k, k / 4.0);
    fputs("</g>\n", f);
    double y = top;
    for (int p = 0; p < e->n_probes; p++) {
        const tt_attn_probe *pr = &e->probes[p];
        hm_layout g = hm_layout_of(pr);
        fprintf(f,
                "<g class=\"probe\">\n<text x=\"%.0f\" y=\"%.0f\" font-size=\"14\" "
                "font-weight=\"bold\">probe %d: &quot;",
                margin, y + 20, p);
        tt_render_xml_puts(f, pr->text);
        fputs("&quot;</text>\n", f);
        for (int l = 0; l < e->L; l++)
            for (int h = 0; h < e->H; h++)
                hm_panel(f, e, pr, l, h, margin + h * g.panel_w, y + 30 + l * g.panel_h, g);
        fputs("</g>\n", f);
        y += 30 + e->L * g.panel_h;
    }
    fputs("</svg>\n", f);
    return tt_atomic_close(&o, true, err, errlen);
}

/* ---- line plots ---- */

/* One axis in plot units (log10 of the value on a log axis) with its ticks. */
typedef struct axis {
    bool log;
    double lo, hi, ticks[64];
    int n;
} axis;

static bool usable(bool log_axis, double v)
{
    return isfinite(v) && (!log_axis || v > 0);
}

static void axis_fit(axis *a, double mn, double mx)
{
    a->n = 0;
    if (!(mn <= mx)) mn = a->log ? 1 : 0, mx = a->log ? 10 : 1; /* no usable point */
    if (a->log) {
        double k0 = floor(log10(mn)), k1 = ceil(log10(mx)), base = 10;
        if (log10(mx / mn) < 2) /* under two decades: powers of 2 say more */
            base = 2, k0 = floor(log2(mn)), k1 = ceil(log2(mx));
        if (k0 == k1) k0--, k1++;
        int every = (int)ceil((k1 - k0 + 1) / 10.0);
        for (double k = k0; k <= k1 && a->n < 64; k += every)
            a->ticks[a->n++] = k * log10(base);
        a->lo = k0 * log10(base), a->hi = k1 * log10(base);
        return;
    }
    if (mn == mx) mn -= fabs(mn) > 0 ? fabs(mn) / 2 : 1, mx += fabs(mx) > 0 ? fabs(mx) / 2 : 1;
    double raw = (mx - mn) / 5, mag = pow(10, floor(log10(raw))), r = raw / mag;
    double step = mag * (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10);
    a->lo = floor(mn / step) * step, a->hi = ceil(mx / step) * step;
    for (int i = 0; a->n < 64 && a->lo + i * step <= a->hi + step * 1e-9; i++) {
        double t = a->lo + i * step;
        a->ticks[a->n++] = fabs(t) < step * 1e-9 ? 0 : t;
    }
}

static double to_unit(const axis *a, double v)
{
    return a->log ? log10(v) : v;
}

static void tick_label(const axis *a, double t, char *buf, size_t n)
{
    double v = a->log ? pow(10, t) : t;
    if (a->log && (v >= 1e5 || v < 1e-3))
        snprintf(buf, n, "1e%d", (int)lround(t)); /* decades only: powers of 2 stay in range */
    else
        snprintf(buf, n, "%.4g", v);
}

int tt_render_lineplot_svg(const char *path, const char *title, const char *xlabel,
                           const char *ylabel, bool log_x, bool log_y, const tt_plot_series *s,
                           int n_series, char *err, size_t errlen)
{
    /* Okabe-Ito: distinguishable with the common colour-vision deficiencies */
    static const char *colour[8] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                    "#E69F00", "#56B4E9", "#000000", "#B8A400"};
    const double W = 720, H = 450, left = 72, right = 20, top = 40, bottom = 56;
    const double pw = W - left - right, ph = H - top - bottom;
    axis ax = {.log = log_x}, ay = {.log = log_y};
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int k = 0; k < n_series; k++)
        for (int i = 0; i < s[k].n; i++)
            if (usable(log_x, s[k].x[i]) && usable(log_y, s[k].y[i])) {
                x0 = fmin(x0, s[k].x[i]), x1 = fmax(x1, s[k].x[i]);
                y0 = fmin(y0, s[k].y[i]), y1 = fmax(y1, s[k].y[i]);
            }
    axis_fit(&ax, x0, x1);
    axis_fit(&ay, y0, y1);
#define PX(v) (left + (to_unit(&ax, v) - ax.lo) / (ax.hi - ax.lo) * pw)
#define PY(v) (top + ph - (to_unit(&ay, v) - ay.lo) / (ay.hi - ay.lo) * ph)
    tt_atomic_file o;
    if (tt_atomic_open(&o, path, err, errlen)) return -1;
    FILE *f = o.f;
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
            "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" "
            "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%.0f\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" "
            "font-weight=\"bold\">",
            W, H, W, H, W / 2);
    tt_render_xml_puts(f, title ? title : "");
    fprintf(f, "</text>\n<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">", left + pw / 2,
            H - 12);
    tt_render_xml_puts(f, xlabel ? xlabel : "");
    fprintf(f,
            "%s</text>\n<text transform=\"translate(18,%.0f) rotate(-90)\" "
            "text-anchor=\"middle\">",
            log_x ? " (log scale)" : "", top + ph / 2);
    tt_render_xml_puts(f, ylabel ? ylabel : "");
    fprintf(f, "%s</text>\n<g class=\"grid\" stroke=\"#e3e3e3\">\n", log_y ? " (log scale)" : "");
    char lab[32];
    for (int i = 0; i < ax.n; i++) {
        double x = left + (ax.ticks[i] - ax.lo) / (ax.hi - ax.lo) * pw;
        tick_label(&ax, ax.ticks[i], lab, sizeof lab);
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/><text x=\"%.1f\" "
                "y=\"%.0f\" text-anchor=\"middle\" stroke=\"none\" fill=\"#333\">%s</text>\n",
                x, top, x, top + ph + 5, x, top + ph + 18, lab);
    }
    for (int i = 0; i < ay.n; i++) {
        double y = top + ph - (ay.ticks[i] - ay.lo) / (ay.hi - ay.lo) * ph;
        tick_label(&ay, ay.ticks[i], lab, sizeof lab);
        fprintf(f,
                "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/><text x=\"%.0f\" "
                "y=\"%.1f\" text-anchor=\"end\" dominant-baseline=\"middle\" stroke=\"none\" "
                "fill=\"#333\">%s</text>\n",
                left - 5, y, left + pw, y, left - 8, y, lab);
    }
    fprintf(f,
            "</g>\n<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
            "stroke=\"#333\"/>\n",
            left, top, pw, ph);
    for (int k = 0; k < n_series; k++) {
        const char *c = colour[k % 8], *dash = k >= 8 ? " stroke-dasharray=\"6 3\"" : "";
        fprintf(f,
                "<g class=\"series\">\n<path fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s "
                "d=\"",
                c, dash);
        bool pen = false, any = false;
        for (int i = 0; i < s[k].n; i++) {
            bool ok = usable(log_x, s[k].x[i]) && usable(log_y, s[k].y[i]);
            const char *cmd = pen ? " L" : " M";
            if (ok) fprintf(f, "%s%.1f %.1f", any ? cmd : "M", PX(s[k].x[i]), PY(s[k].y[i]));
            pen = ok; /* a left-out point breaks the line */
            any = any || ok;
        }
        fputs("\"/>\n", f);
        for (int i = 0; i < s[k].n; i++)
            if (usable(log_x, s[k].x[i]) && usable(log_y, s[k].y[i]))
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", PX(s[k].x[i]),
                        PY(s[k].y[i]), c);
        fputs("</g>\n", f);
    }
#undef PX
#undef PY
    double lw = 60;
    for (int k = 0; k < n_series; k++)
        lw = fmax(lw, 40 + text_px(s[k].name ? s[k].name : "") * 12 / 11);
    double lx = left + pw - lw - 8, ly = top + 8;
    if (n_series)
        fprintf(f,
                "<g id=\"legend\">\n<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%d\" "
                "fill=\"white\" fill-opacity=\"0.9\" stroke=\"#999\"/>\n",
                lx, ly, lw, n_series * 18 + 8);
    for (int k = 0; k < n_series; k++) {
        double yy = ly + 14 + 18 * k;
        fprintf(f,
                "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" "
                "stroke-width=\"2\"%s/><circle cx=\"%.0f\" cy=\"%.0f\" r=\"3\" fill=\"%s\"/>"
                "<text x=\"%.0f\" y=\"%.0f\" dominant-baseline=\"middle\">",
                lx + 6, yy, lx + 30, yy, colour[k % 8], k >= 8 ? " stroke-dasharray=\"6 3\"" : "",
                lx + 18, yy, colour[k % 8], lx + 36, yy);
        tt_render_xml_puts(f, s[k].name ? s[k].name : "");
        fputs("</text>\n", f);
    }
    fputs(n_series ? "</g>\n</svg>\n" : "</svg>\n", f);
    return tt_atomic_close(&o, true, err, errlen);
}
