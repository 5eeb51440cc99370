/* render_svg.c: the heatmap SVG: one epoch's maps as a standalone SVG (probes stacked, an
 * L x H grid of heatmaps each, one colour scale, a title of the caller's or "Attention weights,
 * epoch N"). Label widths are estimated (tt_render_text_px): no font metrics in C. The line
 * plots are render_plot.c's. */
#include "train/report/render.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the heatmap SVG ---- */

typedef struct hm_layout {
    double lab, cs, panel_w, panel_h; /* label band, cell size, one head's panel */
} hm_layout;

static hm_layout hm_layout_of(const tt_attn_probe *pr)
{
    hm_layout g = {.lab = 24};
    for (int t = 0; t < pr->T; t++)
        g.lab = fmax(g.lab, tt_render_text_px(pr->tokens[t], 11) + 8);
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
    return tt_render_heatmap_svg_titled(e, NULL, path, err, errlen);
}

int tt_render_heatmap_svg_titled(const tt_attn_epoch *e, const char *title, const char *path,
                                 char *err, size_t errlen)
{
    const double margin = 16, top = 96;
    double width = 420, height = top;
    for (int p = 0; p < e->n_probes; p++) {
        hm_layout g = hm_layout_of(&e->probes[p]);
        width = fmax(width, 2 * margin + e->H * g.panel_w);
        height += 30 + e->L * g.panel_h;
    }
    if (title) width = fmax(width, 2 * margin + tt_render_text_px(title, 18));
    tt_atomic_file o;
    if (tt_atomic_open(&o, path, err, errlen)) return -1;
    FILE *f = o.f;
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%.0f\" y=\"26\" font-size=\"18\" font-weight=\"bold\">",
            width, height, width, height, margin);
    if (title)
        tt_render_xml_puts(f, title);
    else
        fprintf(f, "Attention weights, epoch %d", e->epoch);
    fprintf(f,
            "</text>\n<text x=\"%.0f\" y=\"44\" fill=\"#444\">rows: query tokens, columns: key "
            "tokens; each row sums to 1; layers and heads from 0</text>\n",
            margin);
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
