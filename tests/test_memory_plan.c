/* test_memory_plan.c: the step-memory plan (tt_step_sizes_for, src/train/run/memory.c) against
 * what real steps use. For a grid of configs (post-LN and pre-LN, ReLU and GELU, dropout and
 * attention dropout 0 and 0.1, tasks tag, classify, lm and mlm, d_ff from d to 8d, n_out below
 * and above d_model, learned positions with embedding scale or not, a few B, T, heads, layers
 * and threads) a run is made through the run API on a small corpus written for it, its arenas
 * and heap are swapped for roomier ones (so that a plan too small shows as two numbers, not as
 * an abort), and two training steps (forward, loss, backward, clipping, optimizer: the calls of
 * loop.c's train_epoch) and an evaluation (no grad) are run. The plan must hold what they used
 * (the value arena's and the tape arena's high-water marks, the part of the gradient heap
 * touched, the most gradients alive at once) and be at most twice it, with the two exceptions
 * explained at check_plan. */
#include "testutil.h"

#include "train/run/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct plan_case {
    const char *task; /* "tag", "classify", "lm", "mlm" */
    bool pre_norm, gelu;
    double dropout, attn_dropout;
    int d, heads, layers, d_ff, B, T;
    int n_out;   /* tags or labels (tag, classify); the vocabulary with its 3 specials (lm, mlm) */
    bool extras; /* learned positions and embed_scale: the most ops around the layers */
    int threads; /* the attention scratch is per thread */
} plan_case;

static const plan_case CASES[] = {
    /* task      pre    gelu   drop attn  d  H  L  d_ff  B   T  n_out extras thr */
    {"tag", false, false, 0.0, 0.0, 16, 2, 1, 16, 4, 8, 5, false, 1},
    {"tag", true, true, 0.1, 0.1, 16, 4, 2, 128, 3, 6, 40, true, 1},
    {"tag", false, true, 0.1, 0.0, 64, 4, 2, 128, 32, 16, 8, false, 1},
    {"tag", true, false, 0.0, 0.1, 32, 1, 3, 96, 2, 32, 64, false, 3},
    {"classify", false, true, 0.1, 0.0, 32, 4, 2, 64, 5, 7, 3, false, 1},
    {"classify", true, false, 0.0, 0.1, 8, 1, 3, 32, 2, 16, 12, true, 1},
    {"classify", false, false, 0.1, 0.1, 64, 8, 1, 512, 8, 12, 2, false, 1},
    {"classify", true, true, 0.1, 0.1, 16, 2, 1, 64, 4, 8, 20, true, 1},
    {"lm", true, false, 0.1, 0.1, 16, 2, 2, 48, 4, 10, 53, false, 1},
    {"lm", true, true, 0.0, 0.0, 24, 3, 2, 24, 6, 9, 13, true, 1},
    {"lm", false, false, 0.1, 0.0, 64, 4, 2, 128, 16, 10, 200, false, 3},
    {"mlm", false, true, 0.1, 0.0, 32, 2, 1, 256, 6, 5, 23, false, 1},
    {"mlm", true, true, 0.0, 0.1, 16, 4, 1, 64, 3, 12, 103, false, 1},
    {"mlm", false, false, 0.1, 0.1, 48, 6, 2, 192, 10, 14, 60, true, 1},
};

/* What the steps of one run used, in bytes (blocks: live gradients). */
typedef struct step_use {
    double values, grads, tape;
    int blocks;
} step_use;

static void describe(const plan_case *k, char *out, size_t len)
{
    snprintf(out, len, "%s %s-LN %s dropout %.1f attn_dropout %.1f d %d heads %d layers %d d_ff "
             "%d B %d T %d n_out %d%s threads %d", k->task, k->pre_norm ? "pre" : "post",
             k->gelu ? "gelu" : "relu", k->dropout, k->attn_dropout, k->d, k->heads, k->layers,
             k->d_ff, k->B, k->T, k->n_out, k->extras ? " learned+embed_scale" : "", k->threads);
}

/* A corpus of full-length lines (padding does not change a step's shapes, so neither its
 * memory) in which each of the n_out classes occurs in train. */
static void write_corpus(const plan_case *k)
{
    const bool tag = !strcmp(k->task, "tag"), classify = !strcmp(k->task, "classify");
    const int n_words = tag || classify ? 7 : k->n_out - TT_TOK_SPECIALS;
    const int n_lines[2] = {k->B + k->n_out, k->B + 1};
    const char *names[2] = {"train.txt", "valid.txt"};
    for (int split = 0; split < 2; split++) {
        FILE *f = fopen(tt_test_path(names[split]), "w");
        ck_assert_ptr_nonnull(f);
        for (int i = 0, w = 0, c = 0; i < n_lines[split]; i++) {
            if (classify) fprintf(f, "L%d\t", c++ % k->n_out);
            for (int t = 0; t < k->T; t++) fprintf(f, "%sw%d", t ? " " : "", w++ % n_words);
            if (tag) {
                fputc('\t', f);
                for (int t = 0; t < k->T; t++) fprintf(f, "%sT%d", t ? " " : "", c++ % k->n_out);
            }
            fputc('\n', f);
        }
        ck_assert_int_eq(fclose(f), 0);
    }
}

static void load_run(const plan_case *k, tt_run *r)
{
    char json[1024], err[TT_CONFIG_ERR];
    snprintf(json, sizeof json,
             "{\"seed\": 5, \"threads\": %d,\n"
             " \"data\": {\"task\": \"%s\", \"seq_len\": %d},\n"
             " \"model\": {\"d_model\": %d, \"n_heads\": %d, \"n_layers\": %d, \"d_ff\": %d,\n"
             "           \"norm\": \"%s\", \"activation\": \"%s\", \"dropout\": %g,\n"
             "           \"attn_dropout\": %g, \"causal\": %s, \"positional\": \"%s\",\n"
             "           \"embed_scale\": %s},\n"
             " \"train\": {\"epochs\": 1, \"batch_size\": %d}}\n",
             k->threads, k->task, k->T, k->d, k->heads, k->layers, k->d_ff,
             k->pre_norm ? "pre" : "post", k->gelu ? "gelu" : "relu", k->dropout,
             k->attn_dropout, strcmp(k->task, "lm") ? "false" : "true",
             k->extras ? "learned" : "sinusoidal", k->extras ? "true" : "false", k->B);
    FILE *f = fopen(tt_test_path("c.json"), "w");
    ck_assert_ptr_nonnull(f);
    fputs(json, f);
    ck_assert_int_eq(fclose(f), 0);
    *r = (tt_run){0};
    ck_assert_msg(tt_config_load(&r->cfg, tt_test_path("c.json"), NULL, 0, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_msg(tt_corpus_load(&r->data, &r->cfg, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(tt_run_init(r, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(tt_corpus_n_out(&r->data), k->n_out);
}

/* Room to spare: the steps then run whatever the plan says, and the marks tell the use. The
 * graph keeps pointers to these structs, which stay where they are. */
static void roomier(tt_run *r, const tt_step_sizes *p)
{
    const tt_device dev = r->cfg.device;
    tt_arena_free(&r->arena);
    tt_arena_free(&r->meta);
    tt_heap_destroy(&r->grads);
    tt_arena_init(&r->arena, "step", dev, 4 * p->values + (1 << 20));
    tt_arena_init(&r->meta, "tape", TT_CPU, 4 * p->tape + (1 << 20));
    tt_heap_init(&r->grads, "gradients", dev, 4 * p->grads + (1 << 20), 4 * p->grad_blocks + 64);
}

/* The calls of loop.c's train_epoch, for two steps. */
static void train_steps(tt_run *r)
{
    const tt_config *c = &r->cfg;
    tt_shuffle(r->order, r->data.train.n, (uint64_t)c->seed, 1);
    r->g.training = true;
    for (int s = 0; s < 2; s++) {
        tt_batch_fill(&r->batch, &r->data, &r->data.train, r->order, s * r->batch.B, &r->mask,
                      c->data.mask_prob);
        tt_var *logits;
        tt_var *loss = tt_run_forward(r, &r->batch, &logits, NULL);
        tt_params_zero_grad(&r->model.params);
        tt_backward(&r->g, loss);
        tt_clip_grad_norm(&r->model.params, c->train.grad_clip);
        tt_optim_step(&r->opt, c->train.lr, NULL);
    }
}

/* The plan for case k and what two training steps and an evaluation of it used; fails the
 * test (naming the config) where the plan is less than the use. */
static step_use measure(const plan_case *k, tt_step_sizes *plan)
{
    char label[256];
    describe(k, label, sizeof label);
    write_corpus(k);
    tt_run r;
    load_run(k, &r);
    *plan = tt_step_sizes_for(tt_backend_get(r.cfg.device), k->B, k->T, k->d, k->d_ff, k->heads,
                              k->layers, k->n_out, k->gelu);
    roomier(&r, plan);
    train_steps(&r);
    tt_run_evaluate(&r);
    step_use u = {(double)r.arena.high, (double)r.grads.high_end, (double)r.meta.high,
                  r.grads.high_blocks};
    tt_run_free(&r);
    const double p[3] = {(double)plan->values, (double)plan->grads, (double)plan->tape};
    const double used[3] = {u.values, u.grads, u.tape};
    const char *what[3] = {"values (the step arena)", "grads (the gradient heap, touched)",
                           "tape (the meta arena)"};
    for (int i = 0; i < 3; i++)
        ck_assert_msg(p[i] >= used[i], "%s: %s: plan %.0f bytes < %.0f used", label, what[i],
                      p[i], used[i]);
    ck_assert_msg(plan->grad_blocks >= u.blocks, "%s: grad_blocks: plan %d < %d alive at once",
                  label, plan->grad_blocks, u.blocks);
    return u;
}

/* The plan is at least the use (measure) and at most twice it, with one exception:
 * - grad_blocks is a count of table entries (16 bytes of host memory each), not a share of the
 *   step's memory: 64 entries cost 1 KiB next to a heap of tens of KiB or more, while a table of
 *   2 x 3 entries would turn the first op that keeps a seventh gradient alive into an abort.
 *   Only its lower bound is checked. */
START_TEST(test_plan_bounds_use)
{
    const plan_case *k = &CASES[_i];
    tt_step_sizes plan;
    step_use ref = measure(k, &plan);
    char label[256];
    describe(k, label, sizeof label);
    const double p[3] = {(double)plan.values, (double)plan.grads, (double)plan.tape};
    const double used[3] = {ref.values, ref.grads, ref.tape};
    const char *what[3] = {"values (the step arena)", "grads (the gradient heap, touched)",
                           "tape (the meta arena)"};
    for (int i = 0; i < 3; i++)
        ck_assert_msg(p[i] <= 2 * used[i], "%s: %s: plan %.0f bytes > 2 x %.0f used", label,
                      what[i], p[i], used[i]);
}
END_TEST

Suite *memory_plan_suite(void)
{
    Suite *s = suite_create("memory_plan");
    TCase *tc = tcase_create("plan");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, tt_tmp_setup, tt_tmp_teardown);
    tcase_add_loop_test(tc, test_plan_bounds_use, 0, (int)(sizeof CASES / sizeof CASES[0]));
    suite_add_tcase(s, tc);
    return s;
}
