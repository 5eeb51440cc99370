/* test_heap.c: the gradient heap on its own (alignment, first fit, reuse and merging of freed
 * blocks, high-water marks, reset, and the aborts on overflow, a full table and a bad free),
 * then on a graph: a model's parameter gradients are bitwise those of the arena-only graph
 * while the heap touches a fraction of what all its gradients took, every released gradient
 * reads NULL, and keep_grads keeps an intermediate's gradient readable. */
#include "testutil.h"

#include "nn/model.h"
#include "tensor/heap.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

Suite *heap_suite(void); /* registered in check_main.c */

static size_t off(const tt_heap *h, const void *p) { return (size_t)((const char *)p - h->base); }

START_TEST(test_alignment_and_sizes)
{
    tt_heap h;
    tt_heap_init(&h, "test", TT_CPU, 4096, 16);
    const size_t ask[5] = {1, 63, 64, 65, 0}, at[5] = {0, 64, 128, 192, 320};
    for (int i = 0; i < 5; i++) {
        void *p = tt_heap_alloc(&h, ask[i]);
        ck_assert_uint_eq((uintptr_t)p % TT_HEAP_ALIGN, 0);
        ck_assert_uint_eq(off(&h, p), at[i]);
    }
    ck_assert_uint_eq(h.used, 384); /* 64 + 64 + 64 + 128 + 64 (0 bytes take a block too) */
    ck_assert_int_eq(h.n_blocks, 5);
    tt_heap_destroy(&h);
}
END_TEST

START_TEST(test_freed_block_is_reused)
{
    tt_heap h;
    tt_heap_init(&h, "test", TT_CPU, 4096, 16);
    void *a = tt_heap_alloc(&h, 100), *b = tt_heap_alloc(&h, 100);
    tt_heap_free(&h, a);
    ck_assert_uint_eq(h.used, 128);
    ck_assert_ptr_eq(tt_heap_alloc(&h, 128), a);
    ck_assert_ptr_eq(tt_heap_alloc(&h, 1), (char *)b + 128);
    tt_heap_destroy(&h);
}
END_TEST

/* The lowest gap that holds the request wins, not the best-fitting one. */
START_TEST(test_first_fit)
{
    tt_heap h;
    tt_heap_init(&h, "test", TT_CPU, 4096, 16);
    void *p[5];
    const size_t size[5] = {64, 128, 64, 256, 64};
    for (int i = 0; i < 5; i++) p[i] = tt_heap_alloc(&h, size[i]);
    tt_heap_free(&h, p[1]); /* gap [64, 192) */
    tt_heap_free(&h, p[3]); /* gap [256, 512) */
    ck_assert_ptr_eq(tt_heap_alloc(&h, 200), p[3]); /* too big for the first gap */
    ck_assert_ptr_eq(tt_heap_alloc(&h, 64), p[1]);  /* both fit: the lower */
    ck_assert_uint_eq(off(&h, tt_heap_alloc(&h, 64)), 128);
    ck_assert_uint_eq(off(&h, tt_heap_alloc(&h, 64)), 576); /* no gap left: after the last */
    ck_assert_uint_eq(h.high_end, 640);
    tt_heap_destroy(&h);
}
END_TEST

/* Freeing a block between two gaps leaves one gap as wide as all three. */
START_TEST(test_neighbouring_gaps_merge)
{
    tt_heap h;
    tt_heap_init(&h, "test", TT_CPU, 4096, 16);
    void *p[4];
    for (int i = 0; i < 4; i++) p[i] = tt_heap_alloc(&h, 64);
    tt_heap_free(&h, p[0]);
    tt_heap_free(&h, p[2]);
    ck_assert_uint_eq(off(&h, tt_heap_alloc(&h, 192)), 256); /* no gap of 192 yet */
    tt_heap_free(&h, p[1]);
    ck_assert_ptr_eq(tt_heap_alloc(&h, 192), p[0]); /* [0, 64) + [64, 128) + [128, 192) */
    ck_assert_int_eq(h.n_blocks, 3);
    ck_assert_uint_eq(h.used, 192 + 64 + 192);
    tt_heap_destroy(&h);
}
END_TEST

/* high_used: the most bytes live at once; high_end: the furthest byte ever handed out;
 * high_blocks: the most blocks live at once. Reset forgets the blocks, not the marks. */
START_TEST(test_high_water_marks_and_reset)
{
    tt_heap h;
    tt_heap_init(&h, "test", TT_CPU, 4096, 16);
    void *a = tt_heap_alloc(&h, 100), *b = tt_heap_alloc(&h, 64);
    ck_assert_uint_eq(h.high_used, 192);
    ck_assert_uint_eq(h.high_end, 192);
    ck_assert_int_eq(h.high_blocks, 2);
    tt_heap_free(&h, a);
    tt_heap_alloc(&h, 300); /* does not fit below b: [192, 512) */
    ck_assert_uint_eq(h.used, 64 + 320);
    ck_assert_uint_eq(h.high_used, 384);
    ck_assert_uint_eq(h.high_end, 512);
    ck_assert_uint_eq(off(&h, tt_heap_alloc(&h, 64)), 0); /* below the mark: it stays */
    ck_assert_uint_eq(h.high_end, 512);
    ck_assert_uint_eq(h.high_used, 448);
    ck_assert_int_eq(h.high_blocks, 3);
    tt_heap_free(&h, b);
    ck_assert_uint_eq(h.high_used, 448);
    tt_heap_reset(&h);
    ck_assert_uint_eq(h.used, 0);
    ck_assert_int_eq(h.n_blocks, 0);
    ck_assert_ptr_eq(tt_heap_alloc(&h, 4096), h.base); /* the whole region is free again */
    ck_assert_uint_eq(h.high_used, 4096);
    ck_assert_uint_eq(h.high_end, 4096);
    ck_assert_int_eq(h.high_blocks, 3);
    tt_heap_destroy(&h);
}
END_TEST

START_TEST(test_overflow_aborts_with_sizes)
{
    tt_heap h;
    tt_heap_init(&h, "grads", TT_CPU, 512, 16);
    tt_heap_alloc(&h, 300);
    tt_expect_abort("heap 'grads' overflow (region full)",
                    "asked for 300 bytes with 320 of 512 in use", "320 in use, 320 touched");
    tt_heap_alloc(&h, 300);
}
END_TEST

/* A gap that would hold it does not help when the table has no room for another block. */
START_TEST(test_full_table_aborts)
{
    tt_heap h;
    tt_heap_init(&h, "grads", TT_CPU, 4096, 2);
    tt_heap_alloc(&h, 64);
    tt_heap_alloc(&h, 64);
    tt_expect_abort("heap 'grads' overflow (block table full)", "asked for 64 bytes",
                    "table of 2 blocks");
    tt_heap_alloc(&h, 64);
}
END_TEST

START_TEST(test_double_free_aborts)
{
    tt_heap h;
    tt_heap_init(&h, "grads", TT_CPU, 4096, 4);
    void *p = tt_heap_alloc(&h, 64);
    tt_heap_alloc(&h, 64);
    tt_heap_free(&h, p);
    tt_expect_abort("heap 'grads'", "not a live block", NULL);
    tt_heap_free(&h, p);
}
END_TEST

START_TEST(test_foreign_free_aborts)
{
    tt_heap h;
    tt_heap_init(&h, "grads", TT_CPU, 4096, 4);
    char *p = tt_heap_alloc(&h, 256);
    tt_expect_abort("heap 'grads'", "not a live block", NULL);
    tt_heap_free(&h, p + 64); /* inside a block, not its start */
}
END_TEST

/* A 3-layer model with dropout and padding, post-LN (_i = 0) or pre-LN (_i = 1). */
enum { MB = 3, MT = 6, MD = 16, MV = 11 };

static tt_model make_model(bool pre_norm)
{
    tt_model_config c = {.vocab = MV, .n_out = 7, .d_model = MD, .n_heads = 2, .n_layers = 3,
                         .d_ff = 48, .max_len = MT, .activation = TT_ACT_GELU,
                         .pre_norm = pre_norm, .positional = TT_POS_LEARNED, .dropout = R(0.1),
                         .attn_dropout = R(0.2), .attn_scale = TT_SCALE_SQRT_DK,
                         .attn_temperature = R(1)};
    tt_model m;
    tt_model_init(&m, &c, TT_CPU);
    tt_model_reset(&m, 5);
    return m;
}

/* One step's loss on g (reset first); the logits and the loss are returned for inspection. */
static tt_var *model_loss(tt_graph *g, tt_model *m, tt_var **logits)
{
    int32_t tok[MB * MT], tgt[MB * MT], pad[MB * MT] = {0};
    for (int i = 0; i < MB * MT; i++) tok[i] = (i * 7 + 3) % MV, tgt[i] = (i * 5 + 1) % 7;
    pad[MT - 1] = pad[2 * MT - 2] = pad[2 * MT - 1] = 1;
    tgt[MT - 1] = TT_IGNORE_INDEX;
    tt_graph_reset(g);
    tt_var *tv = tt_var_from_host(g, tt_shape2(MB, MT), TT_I32, tok, false);
    tt_var *pv = tt_var_from_host(g, tt_shape2(MB, MT), TT_I32, pad, false);
    *logits = tt_model_forward(g, m, tv, &pv->val, NULL);
    tt_var *tg = tt_var_from_host(g, tt_shape2(MB, MT), TT_I32, tgt, false);
    return tt_cross_entropy(g, *logits, tg);
}

/* A test graph whose intermediate gradients come from a heap of `bytes` (owned by the caller). */
static void heap_graph_init(tt_test_graph *t, tt_heap *h, size_t bytes)
{
    tt_test_graph_init(t, 4 << 20, 9);
    tt_heap_init(h, "test-grads", TT_CPU, bytes, 64);
    tt_graph_set_grad_heap(&t->g, h);
}

START_TEST(test_model_grads_bitwise_equal_with_heap)
{
    tt_model m = make_model(_i);
    const int64_t n = m.params.numel;
    real *want = tt_test_alloc(n);
    tt_test_graph plain, t;
    tt_heap h;
    tt_test_graph_init(&plain, 4 << 20, 9);
    heap_graph_init(&t, &h, 1 << 20);
    tt_var *logits;
    for (int step = 0; step < 2; step++) { /* the second step starts from a reset heap */
        tt_params_zero_grad(&m.params);
        tt_var *loss = model_loss(&plain.g, &m, &logits);
        tt_backward(&plain.g, loss);
        ck_assert_ptr_nonnull(logits->grad.data); /* no heap: every gradient stays */
        memcpy(want, m.params.grad, (size_t)n * sizeof(real));

        tt_params_zero_grad(&m.params);
        loss = model_loss(&t.g, &m, &logits);
        tt_backward(&t.g, loss);
        ck_assert_msg(memcmp(m.params.grad, want, (size_t)n * sizeof(real)) == 0,
                      "step %d: parameter gradients differ with the heap", step);
        ck_assert_ptr_null(logits->grad.data);
        ck_assert_ptr_null(loss->grad.data);
        ck_assert_uint_eq(h.used, 0); /* every heap gradient was released */
        ck_assert_int_eq(h.n_blocks, 0);
    }
    /* the plain graph's arena held the values and every gradient, the heap graph's the same
     * values alone */
    ck_assert_uint_gt(plain.data.high, t.data.high);
    size_t all_grads = plain.data.high - t.data.high;
    ck_assert_msg(4 * h.high_end < all_grads, "heap touched %zu bytes of %zu for all gradients",
                  h.high_end, all_grads);
    ck_assert_uint_le(h.high_used, h.high_end);
    free(want);
    tt_heap_destroy(&h);
    tt_test_graph_free(&t);
    tt_test_graph_free(&plain);
    tt_model_free(&m);
}
END_TEST

/* keep_grads: an intermediate's gradient survives backward with the value the arena-only graph
 * computes. */
START_TEST(test_keep_grads_keeps_intermediates)
{
    tt_model m = make_model(false);
    tt_test_graph plain, t;
    tt_heap h;
    tt_test_graph_init(&plain, 4 << 20, 9);
    heap_graph_init(&t, &h, 4 << 20);
    tt_var *want, *got;
    tt_backward(&plain.g, model_loss(&plain.g, &m, &want));
    tt_var *loss = model_loss(&t.g, &m, &got);
    t.g.keep_grads = true;
    tt_backward(&t.g, loss);
    ck_assert_ptr_nonnull(got->grad.data);
    ck_assert(got->grad_in_heap);
    ck_assert_close("d(logits) kept", got->grad.data, want->grad.data, got->grad.n, 0, 0);
    ck_assert_uint_gt(h.used, (size_t)got->grad.n * sizeof(real));
    tt_graph_reset(&t.g);
    ck_assert_uint_eq(h.used, 0);
    tt_heap_destroy(&h);
    tt_test_graph_free(&t);
    tt_test_graph_free(&plain);
    tt_model_free(&m);
}
END_TEST

/* Without keep_grads, asking for a released gradient again is an error, not fresh zeros. */
START_TEST(test_released_grad_aborts)
{
    tt_model m = make_model(false);
    tt_test_graph t;
    tt_heap h;
    heap_graph_init(&t, &h, 1 << 20);
    tt_var *logits;
    tt_backward(&t.g, model_loss(&t.g, &m, &logits));
    ck_assert_ptr_null(logits->grad.data);
    tt_expect_abort("released", "keep_grads", NULL);
    tt_var_grad(&t.g, logits);
}
END_TEST

START_TEST(test_set_heap_on_recorded_tape_aborts)
{
    tt_model m = make_model(false);
    tt_test_graph t;
    tt_heap h;
    tt_test_graph_init(&t, 4 << 20, 9);
    tt_heap_init(&h, "test-grads", TT_CPU, 1 << 20, 64);
    tt_var *logits;
    model_loss(&t.g, &m, &logits);
    tt_expect_abort("recorded tape", NULL, NULL);
    tt_graph_set_grad_heap(&t.g, &h);
}
END_TEST

Suite *heap_suite(void)
{
    Suite *s = suite_create("heap");
    TCase *tc = tcase_create("allocator");
    tcase_add_test(tc, test_alignment_and_sizes);
    tcase_add_test(tc, test_freed_block_is_reused);
    tcase_add_test(tc, test_first_fit);
    tcase_add_test(tc, test_neighbouring_gaps_merge);
    tcase_add_test(tc, test_high_water_marks_and_reset);
    suite_add_tcase(s, tc);

    tc = tcase_create("graph");
    tcase_add_loop_test(tc, test_model_grads_bitwise_equal_with_heap, 0, 2);
    tcase_add_test(tc, test_keep_grads_keeps_intermediates);
    suite_add_tcase(s, tc);

    tc = tcase_create("aborts");
    tcase_add_test_raise_signal(tc, test_overflow_aborts_with_sizes, SIGABRT);
    tcase_add_test_raise_signal(tc, test_full_table_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_double_free_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_foreign_free_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_released_grad_aborts, SIGABRT);
    tcase_add_test_raise_signal(tc, test_set_heap_on_recorded_tape_aborts, SIGABRT);
    suite_add_tcase(s, tc);
    return s;
}
