/* test_plot.c: the line plots (train/report/render_plot.c) and a run's loss.svg (loss_plot.c),
 * read back from their SVG: well-formed, escaped, gaps left out; each legend outside its
 * plotting area; axes that end where the data ends; powers of two on a d_k axis, whole numbers
 * on an epoch axis, tick labels that do not touch; "(under ...)" for a line hidden by another
 * and not for two apart; loss.svg's markers where the metrics file's numbers put them. */
#include "testutil.h"

#include "svg_testutil.h"
#include "train/report/render.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *at(const char *name) { return tt_test_path(name); }

static char *get(const char *path)
{
    char err[256];
    char *s = tt_render_slurp(path, err, sizeof err);
    ck_assert_msg(s, "%s", err);
    return s;
}

/* Renders a one-panel plot into name and returns its text (free it). */
static char *one_panel(const char *name, tt_plot_scale xs, tt_plot_scale ys,
                       const tt_plot_series *s, int n)
{
    char err[512];
    const tt_plot_panel p = {.ylabel = "y", .yscale = ys, .s = s, .n = n};
    const tt_plot plot = {.title = "t", .xlabel = "x", .xscale = xs, .panel = &p, .n_panels = 1};
    ck_assert_msg(!tt_render_plot_svg(at(name), &plot, err, sizeof err), "%s", err);
    char *svg = get(at(name));
    const char *why = tt_svg_xml_problem(svg);
    ck_assert_msg(!why, "%s", why);
    return svg;
}

START_TEST(test_markup)
{
    static const double x[6] = {0, 1, 16, 64, 256, 1024}, y1[6] = {0.5, 0.2, 0.1, 0, -1, 0.01},
                        y2[6] = {2, 3, 5, 8, 13, 21}, y3[6] = {0, -1, 0, NAN, 0, -2};
    const tt_plot_series s[4] = {{.name = "loss <train>", .n = 6, .x = x, .y = y1},
                                 {.name = "b & c", .n = 6, .x = x, .y = y2},
                                 {.name = "never positive", .n = 6, .x = x, .y = y3},
                                 {.name = "empty", .n = 0, .x = x, .y = y1}};
    const tt_plot_scale sc[3] = {TT_LINEAR, TT_LOG10, TT_LOG2};
    for (int lx = 0; lx < 3; lx++)
        for (int ly = 0; ly < 2; ly++) {
            char *svg = one_panel("p.svg", sc[lx], sc[ly], s, 4);
            ck_assert_int_eq(tt_svg_count(svg, "<g class=\"series\">"), 4);
            for (const char *b = "\"nan\0 nan\0\"-nan\0 -nan\0\"inf\0 inf\0\"-inf\0 -inf\0 id=\0";
                 *b; b += strlen(b) + 1)
                ck_assert_msg(!strstr(svg, b), "found '%s' (scales %d %d)", b, lx, ly);
            ck_assert_ptr_nonnull(strstr(svg, ">loss &lt;train&gt;</text>"));
            ck_assert_ptr_nonnull(strstr(svg, ">b &amp; c</text>"));
            ck_assert_int_eq(tt_svg_count(svg, "<g class=\"legend\">"), 1);
            /* a point left out breaks the line: y1 has -1 (and 0) off a log axis */
            if (ly) ck_assert_int_ge(tt_svg_count(svg, " M"), 1);
            free(svg);
        }
    char *svg = one_panel("r.svg", TT_LOG10, TT_LOG10, NULL, 0); /* nothing to draw */
    ck_assert_int_eq(tt_svg_count(svg, "<g class=\"legend\">"), 0);
    free(svg);
}
END_TEST

/* Every panel's legend box lies wholly outside its plotting area: to its right by default,
 * below it with legend_below; a panel that repeats the legend above it shows none. */
START_TEST(test_legend_outside)
{
    static const double x[4] = {0, 1, 2, 3}, a[4] = {1, 2, 3, 4}, b[4] = {4, 3, 2, 1};
    const tt_plot_series s[2] = {{.name = "a rising series with a long name", .n = 4, .x = x,
                                  .y = a},
                                 {.name = "b", .n = 4, .x = x, .y = b}};
    const tt_plot_series other[1] = {{.name = "c", .n = 4, .x = x, .y = b}};
    const tt_plot_panel p[3] = {{.ylabel = "a", .s = s, .n = 2},
                                {.ylabel = "b", .s = s, .n = 2},
                                {.ylabel = "c", .s = other, .n = 1}};
    char err[512];
    for (int below = 0; below < 2; below++) {
        const tt_plot plot = {.title = "t", .xlabel = "x", .panel = p, .n_panels = 3,
                              .legend_below = below};
        ck_assert_msg(!tt_render_plot_svg(at("l.svg"), &plot, err, sizeof err), "%s", err);
        char *svg = get(at("l.svg"));
        tt_svg_panel pn[4];
        ck_assert_int_eq(tt_svg_panels(svg, pn, 4), 3);
        for (int q = 0; q < 3; q++) {
            tt_svg_box f = tt_svg_frame(pn[q]), l;
            bool has = tt_svg_legend(pn[q], &l);
            ck_assert_msg(has == (q != 1), "panel %d: legend %d (the second repeats the first)",
                          q, has);
            if (!has) continue;
            if (below)
                ck_assert_msg(l.y >= f.y + f.h, "panel %d: legend at y %g, area ends at %g", q,
                              l.y, f.y + f.h);
            else
                ck_assert_msg(l.x >= f.x + f.w, "panel %d: legend at x %g, area ends at %g", q,
                              l.x, f.x + f.w);
            for (int r = 0; r < 3; r++) { /* and clear of every other panel's area */
                tt_svg_box o = tt_svg_frame(pn[r]);
                bool apart = l.x >= o.x + o.w || l.x + l.w <= o.x || l.y >= o.y + o.h ||
                             l.y + l.h <= o.y;
                ck_assert_msg(apart, "legend of panel %d overlaps the area of panel %d", q, r);
            }
        }
        free(svg);
    }
}
END_TEST

/* d_k from 4 to 1024 on a log2 axis: ticks 4, 16, 64, 256, 1024 and nothing past the data;
 * y from 0.3 to 700 on a log10 axis: decades 1, 10, 100 and no empty one (0.1, 1000); the first
 * and last points sit near the ends of both axes. */
START_TEST(test_axis_ends)
{
    static const double dk[5] = {4, 16, 64, 256, 1024}, y[5] = {0.3, 2, 15, 120, 700};
    const tt_plot_series s = {.name = "v", .n = 5, .x = dk, .y = y};
    char *svg = one_panel("a.svg", TT_LOG2, TT_LOG10, &s, 1);
    tt_svg_panel p;
    ck_assert_int_eq(tt_svg_panels(svg, &p, 1), 1);
    tt_svg_tick tx[16], ty[16];
    int nx = tt_svg_ticks(p, true, tx, 16), ny = tt_svg_ticks(p, false, ty, 16);
    ck_assert_int_eq(nx, 5);
    for (int i = 0; i < 5; i++)
        ck_assert_msg(tx[i].value == dk[i], "x tick %d: %s", i, tx[i].label);
    ck_assert_int_eq(ny, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(ty[i].value == pow(10, i), "y tick %d: %s", i, ty[i].label);
    tt_svg_box f = tt_svg_frame(p);
    const double first_x = tt_svg_px_of(tx, nx, true, dk[0]);
    const double last_x = tt_svg_px_of(tx, nx, true, dk[4]);
    const double low_y = tt_svg_px_of(ty, ny, true, y[0]);
    const double high_y = tt_svg_px_of(ty, ny, true, y[4]);
    /* the margin is 3% of the data's span on each side */
    ck_assert_msg(first_x - f.x > 0 && first_x - f.x < 0.05 * f.w, "x starts %g px early",
                  first_x - f.x);
    ck_assert_msg(f.x + f.w - last_x > 0 && f.x + f.w - last_x < 0.05 * f.w, "x ends %g px late",
                  f.x + f.w - last_x);
    ck_assert_msg(f.y + f.h - low_y > 0 && f.y + f.h - low_y < 0.05 * f.h, "y starts %g px low",
                  f.y + f.h - low_y);
    ck_assert_msg(high_y - f.y > 0 && high_y - f.y < 0.05 * f.h, "y ends %g px high",
                  high_y - f.y);
    ck_assert(tt_svg_marker_at(p, first_x, low_y, tt_plot_palette[0], 1.5));
    ck_assert(tt_svg_marker_at(p, last_x, high_y, tt_plot_palette[0], 1.5));
    free(svg);
}
END_TEST

/* Tick labels never touch and are neither too few nor too many, over spans from 1e-3 to 1e6 on
 * a linear axis; epochs (whole numbers) get whole-number ticks only. */
START_TEST(test_ticks_readable)
{
    static const double spans[5] = {1e-3, 0.9, 7, 375, 1.234e6};
    for (int k = 0; k < 5; k++) {
        double x[2] = {spans[k] * 0.1, spans[k] * 1.1}, y[2] = {1, 2};
        const tt_plot_series s = {.name = "s", .n = 2, .x = x, .y = y};
        char *svg = one_panel("t.svg", TT_LINEAR, TT_LINEAR, &s, 1);
        tt_svg_panel p;
        tt_svg_panels(svg, &p, 1);
        tt_svg_tick t[40];
        int n = tt_svg_ticks(p, true, t, 40);
        ck_assert_msg(n >= 3 && n <= 12, "span %g: %d ticks", spans[k], n);
        for (int i = 1; i < n; i++) {
            double gap = t[i].px - t[i - 1].px;
            double need = (tt_render_text_px(t[i].label, 11) + tt_render_text_px(t[i - 1].label,
                                                                                11)) / 2;
            ck_assert_msg(gap > need, "span %g: labels %s and %s %g px apart, %g wide", spans[k],
                          t[i - 1].label, t[i].label, gap, need);
        }
        free(svg);
    }
    static const double epoch[4] = {0, 1, 2, 3}, acc[4] = {0.1, 0.9, 0.95, 0.97};
    const tt_plot_series s = {.name = "acc", .n = 4, .x = epoch, .y = acc};
    char *svg = one_panel("e.svg", TT_LINEAR, TT_LINEAR, &s, 1);
    tt_svg_panel p;
    tt_svg_panels(svg, &p, 1);
    tt_svg_tick t[40];
    int n = tt_svg_ticks(p, true, t, 40);
    ck_assert_int_eq(n, 4);
    for (int i = 0; i < n; i++) ck_assert_msg(t[i].value == i, "epoch tick %s", t[i].label);
    free(svg);
}
END_TEST

/* Two equal series: the first is hidden under the second and its legend says so; two series
 * apart (or nearly equal but for one point) have no such note. */
START_TEST(test_overlap_note)
{
    static const double x[5] = {4, 16, 64, 256, 1024}, a[5] = {4, 16, 64, 256, 1024},
                        near[5] = {4.01, 16.02, 63.9, 256.3, 1023}, apart[5] = {1, 1, 1, 1, 1},
                        one_off[5] = {4, 16, 200, 256, 1024};
    const double *second[4] = {a, near, apart, one_off};
    const bool hidden[4] = {true, true, false, false};
    for (int k = 0; k < 4; k++) {
        const tt_plot_series s[2] = {{.name = "measured", .n = 5, .x = x, .y = a},
                                     {.name = "claim", .n = 5, .x = x, .y = second[k]}};
        char *svg = one_panel("o.svg", TT_LOG2, TT_LOG10, s, 2);
        bool noted = strstr(svg, ">measured (under claim)</text>") != NULL;
        ck_assert_msg(noted == hidden[k], "case %d: note %d, want %d", k, noted, hidden[k]);
        ck_assert_ptr_null(strstr(svg, ">claim (under")); /* drawn last: never hidden */
        free(svg);
    }
}
END_TEST

/* A metrics file with known numbers: epoch 0 (before training) at step 0, two epochs of 10
 * steps. Each validation loss, epoch mean and accuracy is a marker where the axes' own tick
 * labels place its value. */
START_TEST(test_loss_plot)
{
    FILE *f = fopen(at("metrics.jsonl"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"step\": 0, \"epoch\": 0, \"valid_loss\": 2, \"valid_acc\": 0.1, "
          "\"valid_acc_ambiguous\": 0.05, \"attention_entropy\": [[1.5]]}\n", f);
    const double vloss[3] = {2, 0.5, 0.2}, mean[2] = {1, 0.3}, acc[3] = {0.1, 0.6, 0.9},
                 amb[3] = {0.05, 0.4, 0.8};
    for (int e = 1; e <= 2; e++) {
        for (int s = 10 * (e - 1) + 1; s <= 10 * e; s++)
            fprintf(f, "{\"step\": %d, \"epoch\": %d, \"loss\": %g, \"lr\": 0.001, "
                    "\"grad_norm\": 1, \"tokens_per_s\": 100}\n", s, e,
                    mean[e - 1] * (1 + 0.1 * (s % 3)));
        fprintf(f, "\n{\"step\": %d, \"epoch\": %d, \"loss\": %g, \"lr\": 0.001, \"grad_norm\": 1, "
                "\"tokens_per_s\": 100, \"valid_loss\": %g, \"valid_acc\": %g, "
                "\"valid_acc_ambiguous\": %g, \"attention_entropy\": [[1]]}\n", 10 * e, e,
                mean[e - 1], vloss[e], acc[e], amb[e]);
    }
    fclose(f);
    char err[512];
    ck_assert_msg(!tt_loss_plot_svg(at("metrics.jsonl"), at("loss.svg"), "run", err, sizeof err),
                  "%s", err);
    char *svg = get(at("loss.svg"));
    ck_assert_ptr_null(tt_svg_xml_problem(svg));
    tt_svg_panel p[3];
    ck_assert_int_eq(tt_svg_panels(svg, p, 3), 2);
    tt_svg_tick tx[20], ty[20], ta[20];
    int nx = tt_svg_ticks(p[1], true, tx, 20), ny = tt_svg_ticks(p[0], false, ty, 20);
    int na = tt_svg_ticks(p[1], false, ta, 20);
    const char *blue = tt_plot_palette[0], *orange = tt_plot_palette[1];
    const char *green = tt_plot_palette[2];
    for (int e = 0; e <= 2; e++) {
        double x = tt_svg_px_of(tx, nx, false, 10 * e);
        ck_assert_msg(tt_svg_marker_at(p[0], x, tt_svg_px_of(ty, ny, true, vloss[e]), orange, 1.5),
                      "epoch %d: no validation-loss marker", e);
        ck_assert_msg(tt_svg_marker_at(p[1], x, tt_svg_px_of(ta, na, false, acc[e]), orange, 1.5),
                      "epoch %d: no accuracy marker", e);
        ck_assert_msg(tt_svg_marker_at(p[1], x, tt_svg_px_of(ta, na, false, amb[e]), green, 1.5),
                      "epoch %d: no ambiguous-words marker", e);
        if (e) /* the epoch's mean loss at its middle step: 5 and 15 */
            ck_assert_msg(tt_svg_marker_at(p[0], tt_svg_px_of(tx, nx, false, 10 * e - 5),
                                           tt_svg_px_of(ty, ny, true, mean[e - 1]), blue, 1.5),
                          "epoch %d: no mean-loss marker", e);
    }
    ck_assert_ptr_nonnull(strstr(svg, ">training loss, each logged step</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">validation accuracy, ambiguous words</text>"));
    free(svg);

    /* without valid_acc_ambiguous, no such series; a line that is not a metrics object fails,
     * naming the file and line */
    f = fopen(at("m2.jsonl"), "w");
    fputs("{\"step\": 0, \"epoch\": 0, \"valid_loss\": 2, \"valid_acc\": 0.1}\n", f);
    fclose(f);
    ck_assert(!tt_loss_plot_svg(at("m2.jsonl"), at("l2.svg"), "run", err, sizeof err));
    svg = get(at("l2.svg"));
    ck_assert_ptr_null(strstr(svg, "ambiguous"));
    free(svg);
    f = fopen(at("m2.jsonl"), "a");
    fputs("[1, 2]\n", f);
    fclose(f);
    ck_assert_int_eq(tt_loss_plot_svg(at("m2.jsonl"), at("l2.svg"), "run", err, sizeof err), -1);
    ck_assert_msg(strstr(err, "m2.jsonl:2:"), "%s", err);
    ck_assert_int_eq(tt_loss_plot_svg(at("none.jsonl"), at("l3.svg"), "run", err, sizeof err),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "none.jsonl: cannot open"));
}
END_TEST

Suite *plot_suite(void)
{
    Suite *s = suite_create("plot");
    TCase *tc = tcase_create("plot");
    tcase_add_checked_fixture(tc, tt_tmp_setup, tt_tmp_teardown);
    tcase_add_test(tc, test_markup);
    tcase_add_test(tc, test_legend_outside);
    tcase_add_test(tc, test_axis_ends);
    tcase_add_test(tc, test_ticks_readable);
    tcase_add_test(tc, test_overlap_note);
    tcase_add_test(tc, test_loss_plot);
    suite_add_tcase(s, tc);
    return s;
}
