/* loss_plot.c: a run's loss.svg, drawn from its metrics.jsonl read back (so a resumed run's
 * plot holds its whole history): (a) the loss against the optimizer step, the training loss
 * of every logged step (thin), each epoch's mean (at the epoch's middle step) and the
 * validation loss after each epoch (epoch 0: before training); (b) the validation accuracy,
 * and on the ambiguous words when the run has them. The loop rewrites it after every
 * evaluation line; the viewer (render_html.c) shows it beside the maps. */
#include "train/report/render.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A growing column of numbers. */
typedef struct column {
    double *v;
    int n, cap;
} column;

static void push(column *c, double v)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->v = tt_xrealloc(c->v, (size_t)c->cap * sizeof(double));
    }
    c->v[c->n++] = v;
}

enum { STEP_X, STEP_LOSS, MEAN_X, MEAN_LOSS, EVAL_X, VALID_LOSS, VALID_ACC, AMB_X, AMB_ACC,
       N_COLS };

static double number(const cJSON *o, const char *key, bool *ok)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *ok = cJSON_IsNumber(v);
    return *ok ? v->valuedouble : 0;
}

/* One line of metrics.jsonl into the columns; -1 with err when it is not a metrics object. */
static int take_line(column *c, const char *line, const char *path, int lineno,
                     double *last_eval, char *err, size_t errlen)
{
    cJSON *o = cJSON_Parse(line);
    bool has_step, has_loss, has_valid, has_acc, has_amb;
    double step = number(o, "step", &has_step), loss = number(o, "loss", &has_loss);
    double valid = number(o, "valid_loss", &has_valid), acc = number(o, "valid_acc", &has_acc);
    double amb = number(o, "valid_acc_ambiguous", &has_amb);
    cJSON_Delete(o);
    if (!has_step)
        return tt_errorf(err, errlen, "%s:%d: not a metrics line (a JSON object with \"step\")",
                         path, lineno);
    if (!has_valid) { /* a training step */
        if (has_loss) push(&c[STEP_X], step), push(&c[STEP_LOSS], loss);
        return 0;
    }
    if (has_loss) /* the epoch's mean training loss, drawn at the epoch's middle step */
        push(&c[MEAN_X], (*last_eval + step) / 2), push(&c[MEAN_LOSS], loss);
    push(&c[EVAL_X], step), push(&c[VALID_LOSS], valid);
    push(&c[VALID_ACC], has_acc ? acc : (double)NAN);
    if (has_amb) push(&c[AMB_X], step), push(&c[AMB_ACC], amb);
    *last_eval = step;
    return 0;
}

static int read_metrics(column *c, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) return tt_errorf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 0;
    char *line = NULL;
    double last_eval = 0;
    int rc = 0, lineno = 0;
    while (!rc && getline(&line, &cap, f) > 0) {
        lineno++;
        if (line[strspn(line, " \t\r\n")]) /* blank lines are skipped */
            rc = take_line(c, line, path, lineno, &last_eval, err, errlen);
    }
    free(line);
    fclose(f);
    return rc;
}

int tt_loss_plot_svg(const char *metrics_path, const char *svg_path, const char *title,
                     char *err, size_t errlen)
{
    column c[N_COLS] = {{0}};
    int rc = read_metrics(c, metrics_path, err, errlen);
    const char *blue = tt_plot_palette[0], *orange = tt_plot_palette[1];
    const tt_plot_series loss[3] = {
        {.name = "training loss, each logged step", .n = c[STEP_X].n, .x = c[STEP_X].v,
         .y = c[STEP_LOSS].v, .style = TT_PLOT_THIN, .colour = blue},
        {.name = "training loss, epoch mean", .n = c[MEAN_X].n, .x = c[MEAN_X].v,
         .y = c[MEAN_LOSS].v, .style = TT_PLOT_LINE_MARKERS, .colour = blue},
        {.name = "validation loss (step 0: before training)", .n = c[EVAL_X].n,
         .x = c[EVAL_X].v, .y = c[VALID_LOSS].v, .style = TT_PLOT_LINE_MARKERS,
         .colour = orange}};
    const tt_plot_series acc[2] = {
        {.name = "validation accuracy", .n = c[EVAL_X].n, .x = c[EVAL_X].v, .y = c[VALID_ACC].v,
         .colour = orange},
        {.name = "validation accuracy, ambiguous words", .n = c[AMB_X].n, .x = c[AMB_X].v,
         .y = c[AMB_ACC].v, .colour = tt_plot_palette[2]}};
    const tt_plot_panel panels[2] = {
        {.ylabel = "loss (cross-entropy)", .yscale = TT_LOG10, .s = loss, .n = 3},
        {.ylabel = "accuracy", .yscale = TT_LINEAR, .s = acc, .n = c[AMB_X].n ? 2 : 1}};
    /* narrow, legends below: the viewer shows it beside the maps */
    const tt_plot p = {.title = title, .xlabel = "optimizer step", .xscale = TT_LINEAR,
                       .panel = panels, .n_panels = 2, .plot_width = 400, .legend_below = true};
    if (!rc) rc = tt_render_plot_svg(svg_path, &p, err, errlen);
    for (int k = 0; k < N_COLS; k++) free(c[k].v);
    return rc;
}

int tt_loss_plot_update(const char *run_dir, char *err, size_t errlen)
{
    size_t n = strlen(run_dir) + 32;
    char *metrics = tt_xmalloc(n), *svg = tt_xmalloc(n), *title = tt_xmalloc(n + 64);
    snprintf(metrics, n, "%s/metrics.jsonl", run_dir);
    snprintf(svg, n, "%s/loss.svg", run_dir);
    const char *name = strrchr(run_dir, '/'); /* the run folder's own name, short enough */
    snprintf(title, n + 64, "%s: loss and validation accuracy",
             name && name[1] ? name + 1 : run_dir);
    int rc = tt_loss_plot_svg(metrics, svg, title, err, errlen);
    free(metrics);
    free(svg);
    free(title);
    return rc;
}
