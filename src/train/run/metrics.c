/* metrics.c: the lines of metrics.jsonl. A line is formatted whole into a buffer made before
 * the first step, then appended with write(2) and the result checked: a write that fails (a
 * full disk, a file that is /dev/full) returns -1 with "DIR/metrics.jsonl: cannot write:
 * REASON", which ends the run with exit status 2, and a part of the line written goes again.
 * Nothing waits in a stdio buffer, so a crash or a kill cuts at most the line being written
 * (a resume drops it). A number that is not
 * finite is written as null, so every line parses as JSON. */
#include "train/report/render.h"
#include "train/run/run.h"

#include <errno.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

void tt_metrics_begin(tt_run *r)
{
    const size_t cap = 1024 + 24 * (size_t)r->cfg.model.n_layers * (size_t)r->cfg.model.n_heads;
    if (r->line_cap < cap) {
        free(r->line);
        r->line = tt_xmalloc(cap);
        r->line_cap = cap;
    }
}

static void put(tt_run *r, size_t *n, const char *fmt, ...) TT_PRINTF(3, 4);
static void put(tt_run *r, size_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(r->line + *n, r->line_cap - *n, fmt, ap);
    va_end(ap);
    TT_ASSERT_MSG(k >= 0 && (size_t)k < r->line_cap - *n, "a metrics line longer than its "
                  "buffer (%zu bytes)", r->line_cap);
    *n += (size_t)k;
}

/* ", "key": v" with v as fmt prints it, or null */
static void put_num(tt_run *r, size_t *n, const char *key, const char *fmt, double v)
{
    char num[TT_JSON_NUM];
    put(r, n, ", \"%s\": %s", key, tt_json_num(num, fmt, v));
}

/* r->line[0..n) appended to metrics.jsonl with one write (and more only if the kernel took
 * part of it) */
static int write_line(tt_run *r, size_t n, char *err, size_t errlen)
{
    TT_ASSERT_MSG(r->metrics, "metrics.jsonl is not open");
    const int fd = fileno(r->metrics);
    for (size_t done = 0; done < n;) {
        ssize_t w = write(fd, r->line + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w > 0) {
            done += (size_t)w;
            continue;
        }
        const int e = w < 0 ? errno : ENOSPC;
        /* the part written goes, so the file ends with a whole line (a device such as
         * /dev/full has nothing to cut: the result does not matter) */
        if (done && ftruncate(fd, lseek(fd, 0, SEEK_END) - (off_t)done) != 0) errno = e;
        return tt_errorf(err, errlen, "%s/metrics.jsonl: cannot write: %s (the lines before "
                         "this one and the checkpoints already written are intact)",
                         r->cfg.output.dir, strerror(e));
    }
    return 0;
}

/* "step", "epoch" and the training fields of m */
static void put_training(tt_run *r, size_t *n, int epoch, const tt_metrics_row *m)
{
    put(r, n, "{\"step\": %lld, \"epoch\": %d", (long long)r->step, epoch);
    put_num(r, n, "loss", "%.9g", m->loss);
    put_num(r, n, "lr", "%.9g", m->lr);
    put_num(r, n, "grad_norm", "%.9g", m->grad_norm);
    put_num(r, n, "tokens_per_s", "%.1f", m->tokens_per_s);
}

int tt_metrics_step(tt_run *r, const tt_metrics_row *m, char *err, size_t errlen)
{
    size_t n = 0;
    put_training(r, &n, r->epoch + 1, m);
    put(r, &n, "}\n");
    return write_line(r, n, err, errlen);
}

int tt_metrics_eval(tt_run *r, const tt_metrics_row *m, const tt_eval *e, char *err,
                    size_t errlen)
{
    const int L = r->cfg.model.n_layers, H = r->cfg.model.n_heads;
    size_t n = 0;
    if (m) put_training(r, &n, r->epoch, m);
    else put(r, &n, "{\"step\": 0, \"epoch\": 0");
    put_num(r, &n, "valid_loss", "%.9g", e->loss);
    put_num(r, &n, "valid_acc", "%.9g", e->acc);
    if (r->data.n_ambiguous) put_num(r, &n, "valid_acc_ambiguous", "%.9g", e->acc_ambiguous);
    put(r, &n, ", \"attention_entropy\": [");
    char num[TT_JSON_NUM];
    for (int l = 0; l < L; l++) {
        put(r, &n, "%s[", l ? ", " : "");
        for (int h = 0; h < H; h++)
            put(r, &n, "%s%s", h ? ", " : "", tt_json_num(num, "%.6g", r->entropy[l * H + h]));
        put(r, &n, "]");
    }
    put(r, &n, "]}\n");
    return write_line(r, n, err, errlen);
}
