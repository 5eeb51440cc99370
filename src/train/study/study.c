/* study.c: the scaling study (study.kind "scaling"): measurements 1-3 and 5a (measure.c), then
 * for each of study.seeds seeds two trainings of a wide-head model on the config's data with
 * attn_scale "sqrt_dk" and "none" (4, training.c), and the first scaled model's maps at three
 * temperatures (5b); the report and plots are written by study_report.c. The study's
 * folder holds only what it wrote: cli.c writes its config.json and no metrics.jsonl, and
 * checkpoints/ and attention/ are made with their first file (loop.c). */
#include "train/study/study.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A signal was noted (signals.c): the study stops between its parts (a training stops after
 * its step); cli.c makes it exit status 130 / 143. A study is not resumed: no checkpoint. */
static int interrupted(char *err, size_t errlen)
{
    const int sig = tt_signal_caught();
    return sig ? tt_errorf(err, errlen, "interrupted (%s) during the study; the files it wrote "
                           "are whole, the study is not finished", tt_signal_name(sig))
               : 0;
}

/* Parts 1-3 and 5a measured, their CSV files written, then the trainings (4, 5b) and their
 * gradient norms' CSV, then the report and plots. */
int tt_study_main(tt_run *r, char *err, size_t errlen)
{
    const tt_config *c = &r->cfg;
    const char *dir = c->output.dir;
    tt_study_results *s = tt_xcalloc(1, sizeof *s);
    s->o = tt_study_defaults((uint64_t)c->seed);
    s->o.samples = c->study.samples;
    s->o.device = c->device;
    const int n = s->o.n_dk;
    printf("scaling study: parts 1-3 with %d samples per d_k, into %s\n", s->o.samples, dir);
    tt_study_variance(&s->o, s->var);
    tt_study_saturation(&s->o, s->sat);
    tt_study_gradients(&s->o, s->gr);
    char path[TT_CONFIG_PATH + 64];
    int rc = interrupted(err, errlen);
    snprintf(path, sizeof path, "%s/variance.csv", dir);
    rc = rc || tt_study_write_csv_var(path, s->var, n, err, errlen);
    snprintf(path, sizeof path, "%s/saturation.csv", dir);
    rc = rc || tt_study_write_csv_sat(path, s->sat, n, err, errlen);
    snprintf(path, sizeof path, "%s/gradients.csv", dir);
    rc = rc || tt_study_write_csv_grad(path, s->gr, n, err, errlen);

    static const double scores[3] = {2, 1, 0.5}, taus[3] = {0.5, 1, 2};
    tt_study_temperature(scores, 3, taus, 3, s->soft);
    for (int i = 0; i < 3; i++) s->temps[i].tau = taus[i];
    s->n_seeds = c->study.seeds;
    s->t = tt_xcalloc((size_t)2 * s->n_seeds, sizeof *s->t);
    for (int k = 0; !rc && k < 2 * s->n_seeds; k++) { /* seed k / 2, sqrt_dk then none */
        bool first = k == 0;
        if ((rc = interrupted(err, errlen))) break;
        rc = tt_study_train(r, k / 2, k % 2 == 0, &s->t[k], s->temps, first ? 3 : 0,
                            first ? &s->valid_uniform : NULL, first ? &s->probe_uniform : NULL,
                            err, errlen);
    }
    snprintf(path, sizeof path, "%s/attn_grad_norms.csv", dir);
    if (!rc) rc = tt_study_write_csv_grad_norms(path, s->t, 2 * s->n_seeds, err, errlen);
    if (!rc) rc = tt_study_write_report(c, s, err, errlen);
    for (int k = 0; k < 2 * s->n_seeds; k++) tt_study_trace_free(&s->t[k]);
    free(s->t);
    free(s);
    if (!rc) printf("\nwrote %s/report.md (with CSV files and SVG plots)\n", dir);
    return rc ? -1 : 0;
}
