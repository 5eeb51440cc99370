/* test_optim.c: optimizers, clipping and schedules (train/optim/optim.h). AdamW, SGD with momentum
 * 0.9 and plain SGD must follow PyTorch's own trajectories in tests/fixtures/optim.safetensors
 * (written by tests/make_optim_fixtures.py, whose docstring names every tensor) step by step,
 * parameters and optimizer state, to relative error 1e-12 in float64 and 1e-5 in float32;
 * clip_grad_norm_ results likewise; the schedules against values worked out by hand. */
#include "testutil.h"

#include "train/optim/optim.h"

#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TT_DOUBLE
#define OPT_TOL 1e-12
#else
#define OPT_TOL 1e-5
#endif
#define ERR_LEN 512

static void open_fixture(tt_st_file *f)
{
    const char *dir = getenv("TT_FIXTURES");
    char path[1024], err[ERR_LEN];
    snprintf(path, sizeof path, "%s/optim.safetensors", dir ? dir : "tests/fixtures");
    ck_assert_msg(tt_st_load(f, path, err, sizeof err) == 0,
                  "%s (run the tests from the repository root; regenerate with "
                  "/usr/bin/python3 tests/make_optim_fixtures.py)", err);
}

static void read_entry(const tt_st_file *f, const char *name, real *out, int64_t n)
{
    const tt_st_entry *e = tt_st_find(f, name);
    ck_assert_msg(e, "optim fixture has no tensor %s", name);
    char err[ERR_LEN];
    ck_assert_msg(tt_st_read_real(e, out, n, err, sizeof err) == 0, "%s", err);
}

static double read_scalar(const tt_st_file *f, const char *name)
{
    const tt_st_entry *e = tt_st_find(f, name);
    ck_assert_msg(e && e->dtype == TT_ST_F64 && e->numel == 1, "optim fixture: %s", name);
    double x;
    memcpy(&x, e->data, sizeof x);
    return x;
}

static double meta_num(const tt_st_file *f, const char *key)
{
    const char *s = tt_st_meta(f, key);
    ck_assert_msg(s, "optim fixture has no metadata %s", key);
    char *end;
    double x = strtod(s, &end);
    ck_assert_msg(end != s && *end == 0, "optim fixture metadata %s = '%s'", key, s);
    return x;
}

/* w [3,4], b [5], z [2] on the CPU (with padding between them), values from init.<p>. */
static void make_params(tt_params *ps, const tt_st_file *f)
{
    tt_params_init(ps, TT_CPU);
    tt_params_add(ps, "w", tt_shape2(3, 4));
    tt_params_add(ps, "b", tt_shape1(5));
    tt_params_add(ps, "z", tt_shape1(2));
    tt_params_finalize(ps);
    ck_assert_int_gt(ps->numel, 12 + 5 + 2); /* the padding is exercised */
    char err[ERR_LEN];
    ck_assert_msg(tt_params_load(ps, NULL, f, "init.", true, err, sizeof err) == 0, "%s", err);
}

static int64_t numel_of(const tt_param *p) { return tt_shape_numel(p->var.val.shape); }

/* Every parameter's gradient from <prefix><name>. */
static void load_grads(tt_params *ps, const tt_st_file *f, const char *prefix)
{
    char err[ERR_LEN];
    ck_assert_msg(tt_params_load(ps, ps->grad, f, prefix, true, err, sizeof err) == 0, "%s", err);
}


/* Compares buf + offset of every parameter with <prefix><name> (elementwise, to OPT_TOL relative
 * to the tensor's largest value) and returns the worst 2-norm relative error. */
static double compare_flat(const tt_params *ps, const real *buf, const tt_st_file *f,
                           const char *prefix)
{
    double worst = 0;
    char name[128];
    for (int i = 0; i < ps->n; i++) {
        const tt_param *p = ps->items[i];
        int64_t n = numel_of(p);
        real *want = tt_test_alloc(n);
        snprintf(name, sizeof name, "%s%s", prefix, p->name);
        read_entry(f, name, want, n);
        double amax = 0;
        for (int64_t j = 0; j < n; j++) amax = fmax(amax, fabs((double)want[j]));
        ck_assert_close(name, buf + p->offset, want, n, OPT_TOL * amax, OPT_TOL);
        double e = tt_rel_err(buf + p->offset, want, n);
        ck_assert_msg(e <= OPT_TOL, "%s: relative error %.3g > %.0e", name, e, OPT_TOL);
        worst = fmax(worst, e);
        free(want);
    }
    return worst;
}

/* Elements of buf outside every parameter (the alignment padding) are all 0. */
static void check_padding_zero(const tt_params *ps, const real *buf, const char *what)
{
    for (int64_t j = 0; j < ps->numel; j++) {
        bool inside = false;
        for (int i = 0; i < ps->n; i++) {
            int64_t lo = ps->items[i]->offset;
            inside |= j >= lo && j < lo + numel_of(ps->items[i]);
        }
        ck_assert_msg(inside || buf[j] == R(0), "%s: padding element %lld is %g", what,
                      (long long)j, (double)buf[j]);
    }
}

static tt_config optim_config(tt_optimizer kind, const tt_st_file *f, const char *run)
{
    tt_config c;
    memset(&c, 0, sizeof c);
    char key[64];
    c.train.optimizer = kind;
    c.train.lr = meta_num(f, "lr");
    snprintf(key, sizeof key, "%s.weight_decay", run);
    c.train.weight_decay = meta_num(f, key);
    if (kind == TT_OPT_ADAMW) {
        c.train.beta1 = meta_num(f, "adamw.beta1");
        c.train.beta2 = meta_num(f, "adamw.beta2");
        c.train.eps = meta_num(f, "adamw.eps");
        c.train.momentum = 0.5; /* ignored by AdamW */
    } else {
        snprintf(key, sizeof key, "%s.momentum", run);
        c.train.momentum = tt_st_meta(f, key) ? meta_num(f, key) : 0.0;
        c.train.beta1 = 0.5, c.train.beta2 = 0.5, c.train.eps = 0.5; /* ignored by SGD */
    }
    return c;
}

/* Runs `run` (adamw, sgd_mom, sgd_plain) over the fixture's steps and learning rates; compares
 * the parameters after every step and the state after the last (state1, state2: the fixture
 * names of m and v, or NULL). */
static void check_trajectory(tt_optimizer kind, const char *run, const char *state1,
                             const char *state2)
{
    tt_st_file f;
    open_fixture(&f);
    tt_params ps;
    make_params(&ps, &f);
    tt_config c = optim_config(kind, &f, run);
    tt_optim o;
    tt_optim_init(&o, &ps, &c);
    int steps = (int)meta_num(&f, "steps");
    const tt_st_entry *lr = tt_st_find(&f, "lr"); /* read as double in both builds */
    ck_assert(lr && lr->dtype == TT_ST_F64 && lr->numel == steps);
    double worst = 0;
    char prefix[64];
    for (int k = 1; k <= steps; k++) {
        snprintf(prefix, sizeof prefix, "grad.%d.", k);
        load_grads(&ps, &f, prefix);
        double lr_k;
        memcpy(&lr_k, (const char *)lr->data + (k - 1) * sizeof(double), sizeof lr_k);
        tt_optim_step(&o, lr_k, NULL);
        ck_assert_int_eq(o.t, k);
        snprintf(prefix, sizeof prefix, "%s.%d.", run, k);
        worst = fmax(worst, compare_flat(&ps, ps.data, &f, prefix));
    }
    if (state1) worst = fmax(worst, compare_flat(&ps, o.m, &f, state1));
    if (state2) worst = fmax(worst, compare_flat(&ps, o.v, &f, state2));
    check_padding_zero(&ps, ps.data, "parameters");
    check_padding_zero(&ps, o.m, "m");
    check_padding_zero(&ps, o.v, "v");
    printf("  optim: %-9s vs torch.optim, %d steps: worst relative error %.2e\n", run, steps,
           worst);
    tt_optim_free(&o);
    tt_params_free(&ps);
    tt_st_close(&f);
}

START_TEST(test_adamw_matches_pytorch)
{
    check_trajectory(TT_OPT_ADAMW, "adamw", "adamw.exp_avg.", "adamw.exp_avg_sq.");
}
END_TEST

START_TEST(test_sgd_momentum_matches_pytorch)
{
    check_trajectory(TT_OPT_SGD, "sgd_mom", "sgd_mom.momentum_buffer.", NULL);
}
END_TEST

START_TEST(test_sgd_plain_matches_pytorch)
{
    check_trajectory(TT_OPT_SGD, "sgd_plain", NULL, NULL);
}
END_TEST

/* z's gradient is 0 at every step, yet AdamW decays it: z_k = z_0 prod (1 - lr_k wd). */
START_TEST(test_adamw_decays_zero_grad_params)
{
    tt_st_file f;
    open_fixture(&f);
    tt_params ps;
    make_params(&ps, &f);
    tt_config c = optim_config(TT_OPT_ADAMW, &f, "adamw");
    tt_optim o;
    tt_optim_init(&o, &ps, &c);
    const tt_param *z = tt_params_find(&ps, "z");
    double z0[2] = {(double)ps.data[z->offset], (double)ps.data[z->offset + 1]};
    double lr = 0.01, scale = 1;
    for (int k = 0; k < 4; k++) {
        tt_params_zero_grad(&ps);
        tt_optim_step(&o, lr * (k + 1), NULL);
        scale *= 1 - lr * (k + 1) * c.train.weight_decay;
    }
    for (int j = 0; j < 2; j++) {
        double got = (double)ps.data[z->offset + j];
        ck_assert_msg(z0[j] != 0 && fabs(got - z0[j] * scale) <= OPT_TOL * fabs(z0[j]),
                      "z[%d]: got %.17g, want %.17g", j, got, z0[j] * scale);
    }
    tt_optim_free(&o);
    tt_params_free(&ps);
    tt_st_close(&f);
}
END_TEST

/* PyTorch's SGD adds the weight decay to a copy: our gradients are left as given. */
START_TEST(test_sgd_leaves_gradients)
{
    tt_st_file f;
    open_fixture(&f);
    tt_params ps;
    make_params(&ps, &f);
    tt_config c = optim_config(TT_OPT_SGD, &f, "sgd_mom");
    tt_optim o;
    tt_optim_init(&o, &ps, &c);
    load_grads(&ps, &f, "grad.1.");
    real *g0 = tt_test_alloc(ps.numel);
    memcpy(g0, ps.grad, (size_t)ps.numel * sizeof(real));
    tt_optim_step(&o, 0.1, NULL);
    tt_optim_step(&o, 0.1, NULL);
    ck_assert_close("grad after sgd", ps.grad, g0, ps.numel, 0, 0);
    free(g0);
    tt_optim_free(&o);
    tt_params_free(&ps);
    tt_st_close(&f);
}
END_TEST

/* The gate (the step's loss, on the device): a finite one lets both optimizers update, a NaN
 * or an infinite one leaves parameters and state exactly as they were (t still counts). */
START_TEST(test_gate_blocks_nonfinite_loss)
{
    static const tt_optimizer KIND[] = {TT_OPT_ADAMW, TT_OPT_SGD};
    static const char *const FIXTURE[] = {"adamw", "sgd_mom"};
    const real GATE[] = {R(2.5), (real)NAN, R_INF, -R_INF};
    for (int k = 0; k < 2; k++)
        for (int gi = 0; gi < 4; gi++) {
            tt_st_file f;
            open_fixture(&f);
            tt_params ps;
            make_params(&ps, &f);
            tt_config c = optim_config(KIND[k], &f, FIXTURE[k]);
            tt_optim o;
            tt_optim_init(&o, &ps, &c);
            load_grads(&ps, &f, "grad.1.");
            tt_optim_step(&o, 0.1, NULL); /* a state to keep: moments not 0 */
            const size_t bytes = (size_t)ps.numel * sizeof(real);
            real *p0 = tt_test_alloc(ps.numel), *m0 = tt_test_alloc(ps.numel);
            real *v0 = tt_test_alloc(ps.numel);
            memcpy(p0, ps.data, bytes);
            memcpy(m0, o.m, bytes);
            memcpy(v0, o.v, bytes);
            real gate = GATE[gi];
            tt_optim_step(&o, 0.1, &gate);
            const bool same = memcmp(p0, ps.data, bytes) == 0 &&
                              memcmp(m0, o.m, bytes) == 0 && memcmp(v0, o.v, bytes) == 0;
            ck_assert_msg(same == (gi > 0), "%s, gate %g: parameters %s", FIXTURE[k],
                          (double)gate, gi > 0 ? "changed" : "did not change");
            ck_assert_int_eq(o.t, 2);
            free(p0);
            free(m0);
            free(v0);
            tt_optim_free(&o);
            tt_params_free(&ps);
            tt_st_close(&f);
        }
}
END_TEST

/* The fixture's learning rates are our cosine schedule with warm-up. */
START_TEST(test_schedule_matches_fixture_lr)
{
    tt_st_file f;
    open_fixture(&f);
    int steps = (int)meta_num(&f, "steps");
    const tt_st_entry *e = tt_st_find(&f, "lr");
    ck_assert(e && e->dtype == TT_ST_F64 && e->numel == steps);
    for (int k = 0; k < steps; k++) {
        double want;
        memcpy(&want, (const char *)e->data + k * sizeof(double), sizeof want);
        double got = tt_schedule_lr(TT_SCHED_COSINE, meta_num(&f, "lr"), k,
                                    (int64_t)meta_num(&f, "warmup"), steps);
        ck_assert_msg(fabs(got - want) <= 1e-15 * fabs(want), "lr[%d]: got %.17g want %.17g",
                      k, got, want);
    }
    tt_st_close(&f);
}
END_TEST

START_TEST(test_init_zeroes_state)
{
    tt_params ps;
    tt_params_init(&ps, TT_CPU);
    tt_params_add(&ps, "a", tt_shape2(7, 9));
    tt_params_finalize(&ps);
    tt_config c;
    memset(&c, 0, sizeof c);
    c.train.optimizer = TT_OPT_ADAMW;
    c.train.lr = 3e-4, c.train.beta1 = 0.8, c.train.beta2 = 0.99, c.train.eps = 1e-7;
    c.train.weight_decay = 0.02, c.train.momentum = 0.7;
    /* glibc's M_PERTURB fills fresh allocations with junk, and a first optimizer fills its
     * moments and frees them, so the second's must be cleared by tt_optim_init. */
    mallopt(M_PERTURB, 0x5a);
    tt_optim o;
    tt_optim_init(&o, &ps, &c);
    tt_test_normal(ps.grad, ps.numel, 3);
    tt_optim_step(&o, 1e-3, NULL);
    tt_optim_free(&o);
    tt_params_zero_grad(&ps);
    tt_optim_init(&o, &ps, &c);
    ck_assert_int_eq(o.kind, TT_OPT_ADAMW);
    ck_assert(o.lr == 3e-4 && o.beta1 == 0.8 && o.beta2 == 0.99 && o.eps == 1e-7);
    ck_assert(o.weight_decay == 0.02 && o.momentum == 0.7 && o.ps == &ps);
    ck_assert_int_eq(o.t, 0);
    ck_assert(o.m && o.v);
    real *zero = tt_test_alloc(ps.numel);
    ck_assert_close("m", o.m, zero, ps.numel, 0, 0);
    ck_assert_close("v", o.v, zero, ps.numel, 0, 0);
    mallopt(M_PERTURB, 0);
    for (int k = 1; k <= 3; k++) {
        tt_optim_step(&o, 1e-3, NULL);
        ck_assert_int_eq(o.t, k);
    }
    free(zero);
    tt_optim_free(&o);
    tt_params_free(&ps);
}
END_TEST

/* ---- clipping ---- */

static void check_clip(const char *max_case, const char *want_case, bool changed)
{
    tt_st_file f;
    open_fixture(&f);
    tt_params ps;
    make_params(&ps, &f);
    load_grads(&ps, &f, "clip.in.");
    real *g0 = tt_test_alloc(ps.numel);
    memcpy(g0, ps.grad, (size_t)ps.numel * sizeof(real));
    char name[64];
    double max_norm = 0;
    if (max_case) {
        snprintf(name, sizeof name, "clip.%s.max_norm", max_case);
        max_norm = read_scalar(&f, name);
    }
    snprintf(name, sizeof name, "clip.%s.norm", want_case);
    double want = read_scalar(&f, name);
    double got = tt_clip_grad_norm(&ps, max_norm);
    /* the inputs are float32 numbers and the sum is in double: 1e-12 in both builds */
    ck_assert_msg(fabs(got - want) <= 1e-12 * want, "norm (max_norm %g): got %.17g want %.17g",
                  max_norm, got, want);
    double grad_err = 0;
    if (changed) {
        snprintf(name, sizeof name, "clip.%s.out.", want_case);
        grad_err = compare_flat(&ps, ps.grad, &f, name);
        double after = 0;
        for (int64_t i = 0; i < ps.numel; i++) after += (double)ps.grad[i] * (double)ps.grad[i];
        ck_assert_msg(sqrt(after) < max_norm, "clipped norm %g >= %g", sqrt(after), max_norm);
    } else {
        ck_assert_close("gradients left unclipped", ps.grad, g0, ps.numel, 0, 0);
        if (max_case) grad_err = compare_flat(&ps, ps.grad, &f, "clip.hi.out.");
    }
    printf("  optim: clip max_norm %-8.4g vs clip_grad_norm_: norm relative error %.2e, "
           "gradients %.2e\n", max_norm, fabs(got - want) / want, grad_err);
    check_padding_zero(&ps, ps.grad, "clipped gradients");
    free(g0);
    tt_params_free(&ps);
    tt_st_close(&f);
}

START_TEST(test_clip_above_max_scales) { check_clip("lo", "lo", true); }
END_TEST

START_TEST(test_clip_below_max_unchanged) { check_clip("hi", "hi", false); }
END_TEST

/* max_norm 0 turns clipping off, but the norm is still measured and returned. */
START_TEST(test_clip_max_zero_only_measures) { check_clip(NULL, "lo", false); }
END_TEST

START_TEST(test_clip_zero_gradients)
{
    tt_params ps;
    tt_params_init(&ps, TT_CPU);
    tt_params_add(&ps, "a", tt_shape1(10));
    tt_params_finalize(&ps);
    double n = tt_clip_grad_norm(&ps, 1.0);
    ck_assert_msg(n == 0.0, "norm of zero gradients: %g", n);
    for (int64_t i = 0; i < ps.numel; i++) ck_assert(ps.grad[i] == R(0));
    tt_params_free(&ps);
}
END_TEST

/* ---- schedules: lr 1e-3, warm-up 4, 20 steps unless said otherwise ---- */

static void check_lr(tt_schedule s, int64_t k, int64_t warmup, int64_t total, double want)
{
    double got = tt_schedule_lr(s, 1e-3, k, warmup, total);
    ck_assert_msg(fabs(got - want) <= 1e-15 + 1e-13 * fabs(want),
                  "schedule %d, k %lld, warmup %lld, total %lld: got %.17g want %.17g", (int)s,
                  (long long)k, (long long)warmup, (long long)total, got, want);
}

START_TEST(test_schedule_warmup)
{
    for (int s = TT_SCHED_CONSTANT; s <= TT_SCHED_COSINE; s++) {
        check_lr(s, 0, 4, 20, 2.5e-4);
        check_lr(s, 1, 4, 20, 5e-4);
        check_lr(s, 2, 4, 20, 7.5e-4);
        check_lr(s, 3, 4, 20, 1e-3);
        check_lr(s, 4, 4, 20, 1e-3); /* f = 0 */
        check_lr(s, 0, 0, 20, 1e-3); /* warm-up 0: none */
        check_lr(s, 0, 1, 20, 1e-3);
    }
}
END_TEST

START_TEST(test_schedule_constant)
{
    check_lr(TT_SCHED_CONSTANT, 12, 4, 20, 1e-3);
    check_lr(TT_SCHED_CONSTANT, 19, 4, 20, 1e-3);
    check_lr(TT_SCHED_CONSTANT, 19, 0, 20, 1e-3);
}
END_TEST

START_TEST(test_schedule_linear)
{
    check_lr(TT_SCHED_LINEAR, 12, 4, 20, 1e-3 * (1 - 8.0 / 16));
    check_lr(TT_SCHED_LINEAR, 19, 4, 20, 1e-3 * (1 - 15.0 / 16));
    check_lr(TT_SCHED_LINEAR, 20, 4, 20, 0);
    check_lr(TT_SCHED_LINEAR, 10, 0, 20, 5e-4);
    check_lr(TT_SCHED_LINEAR, 19, 0, 20, 5e-5);
    check_lr(TT_SCHED_LINEAR, 25, 4, 20, 0); /* past the end: stays 0, never negative */
}
END_TEST

START_TEST(test_schedule_cosine)
{
    const double pi = 3.14159265358979323846;
    check_lr(TT_SCHED_COSINE, 12, 4, 20, 5e-4);
    check_lr(TT_SCHED_COSINE, 8, 4, 20, 1e-3 * 0.5 * (1 + cos(pi * 0.25)));
    check_lr(TT_SCHED_COSINE, 16, 4, 20, 1e-3 * 0.5 * (1 + cos(pi * 0.75)));
    check_lr(TT_SCHED_COSINE, 19, 4, 20, 1e-3 * 0.5 * (1 + cos(pi * 15.0 / 16)));
    check_lr(TT_SCHED_COSINE, 10, 0, 20, 5e-4);
    check_lr(TT_SCHED_COSINE, 5, 0, 20, 1e-3 * 0.5 * (1 + cos(pi * 0.25)));
    check_lr(TT_SCHED_COSINE, 30, 4, 20, 0); /* past the end: stays 0 */
}
END_TEST

/* total <= warmup: no division by zero, f counted in whole steps past the warm-up. */
START_TEST(test_schedule_short_runs)
{
    check_lr(TT_SCHED_LINEAR, 1, 4, 2, 5e-4);
    check_lr(TT_SCHED_LINEAR, 4, 4, 4, 1e-3);
    check_lr(TT_SCHED_COSINE, 4, 4, 4, 1e-3);
    check_lr(TT_SCHED_LINEAR, 5, 4, 4, 0);
    check_lr(TT_SCHED_LINEAR, 0, 0, 0, 1e-3);
    check_lr(TT_SCHED_COSINE, 0, 0, 1, 1e-3);
    check_lr(TT_SCHED_COSINE, 0, 0, 0, 1e-3);
}
END_TEST

/* ---- devices ---- */

/* Four steps of `kind` with clipping at 0.5 on `dev`, from values and gradients drawn on the
 * host; out gets the values, m and v (3 x numel) and norms the four gradient norms. */
static void steps_on(tt_device dev, tt_optimizer kind, real *out, double *norms)
{
    tt_params ps;
    tt_params_init(&ps, dev);
    tt_params_add(&ps, "w", tt_shape2(37, 5));
    tt_params_add(&ps, "b", tt_shape1(9));
    tt_params_finalize(&ps);
    const int64_t n = ps.numel;
    ck_assert_int_le(n, 512); /* the caller's out holds 3 x 512 */
    real *host = tt_params_host_alloc(&ps, NULL, false);
    tt_rng rng;
    tt_rng_init(&rng, 5, 0);
    tt_rng_normal(&rng, host, n, R(0), R(1));
    tt_params_from_host(&ps, NULL, host);
    tt_config c;
    memset(&c, 0, sizeof c);
    c.train.optimizer = kind;
    c.train.lr = 1e-2, c.train.beta1 = 0.9, c.train.beta2 = 0.999, c.train.eps = 1e-8;
    c.train.weight_decay = 0.01, c.train.momentum = 0.9;
    tt_optim o;
    tt_optim_init(&o, &ps, &c);
    for (int s = 0; s < 4; s++) {
        tt_rng_normal(&rng, host, n, R(0), R(0.2));
        tt_params_from_host(&ps, ps.grad, host);
        norms[s] = tt_clip_grad_norm(&ps, 0.5);
        tt_optim_step(&o, 1e-2, NULL);
    }
    tt_params_to_host(&ps, out, NULL);
    tt_params_to_host(&ps, out + n, o.m);
    tt_params_to_host(&ps, out + 2 * n, o.v);
    free(host);
    tt_optim_free(&o);
    tt_params_free(&ps);
}

/* The guard device runs the CPU's kernels behind memory the host cannot touch: the optimizers
 * and clipping reach their buffers only through the backend table, and give the same bits. */
START_TEST(test_guard_device_same_bits)
{
    const int64_t cap = 3 * 512;
    for (int k = 0; k < 2; k++) {
        tt_optimizer kind = k ? TT_OPT_SGD : TT_OPT_ADAMW;
        real *cpu = tt_test_alloc(cap), *guard = tt_test_alloc(cap);
        double ncpu[4], nguard[4];
        memset(cpu, 0, (size_t)cap * sizeof(real));
        memset(guard, 0, (size_t)cap * sizeof(real));
        steps_on(TT_CPU, kind, cpu, ncpu);
        steps_on(TT_GUARD, kind, guard, nguard);
        ck_assert_msg(memcmp(cpu, guard, (size_t)cap * sizeof(real)) == 0,
                      "optimizer %d: guard device differs from the CPU", k);
        ck_assert(memcmp(ncpu, nguard, sizeof ncpu) == 0);
        ck_assert(ncpu[0] > 0.5); /* clipping was exercised */
        free(cpu);
        free(guard);
    }
}
END_TEST

Suite *optim_suite(void)
{
    Suite *s = suite_create("optim");
    TCase *tc = tcase_create("pytorch");
    tcase_add_test(tc, test_adamw_matches_pytorch);
    tcase_add_test(tc, test_sgd_momentum_matches_pytorch);
    tcase_add_test(tc, test_sgd_plain_matches_pytorch);
    tcase_add_test(tc, test_adamw_decays_zero_grad_params);
    tcase_add_test(tc, test_sgd_leaves_gradients);
    tcase_add_test(tc, test_gate_blocks_nonfinite_loss);
    tcase_add_test(tc, test_schedule_matches_fixture_lr);
    tcase_add_test(tc, test_init_zeroes_state);
    suite_add_tcase(s, tc);

    tc = tcase_create("clip");
    tcase_add_test(tc, test_clip_above_max_scales);
    tcase_add_test(tc, test_clip_below_max_unchanged);
    tcase_add_test(tc, test_clip_max_zero_only_measures);
    tcase_add_test(tc, test_clip_zero_gradients);
    suite_add_tcase(s, tc);

    tc = tcase_create("schedule");
    tcase_add_test(tc, test_schedule_warmup);
    tcase_add_test(tc, test_schedule_constant);
    tcase_add_test(tc, test_schedule_linear);
    tcase_add_test(tc, test_schedule_cosine);
    tcase_add_test(tc, test_schedule_short_runs);
    suite_add_tcase(s, tc);

    tc = tcase_create("device");
    tcase_add_test(tc, test_guard_device_same_bits);
    suite_add_tcase(s, tc);
    return s;
}
