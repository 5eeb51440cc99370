/* graph.c: recording and replaying the tape (see graph.h). */
#include "autograd/graph.h"

#include <string.h>

void tt_graph_init(tt_graph *g, tt_arena *data, tt_arena *meta, tt_rng *rng)
{
    TT_ASSERT_MSG(meta->device == TT_CPU && meta != data,
                  "the graph's meta arena must be a host arena of its own");
    *g = (tt_graph){.data = data, .meta = meta, .be = tt_backend_get(data->device),
                    .device = data->device, .training = true, .rng = rng, .parts = 1};
}

tt_rng tt_graph_take(tt_graph *g, int64_t n)
{
    TT_ASSERT_MSG(g->rng, "dropout: the graph has no rng (tt_graph_init with an rng)");
    return tt_rng_take_share(g->rng, n, g->part, g->parts);
}

void tt_graph_set_grad_heap(tt_graph *g, tt_heap *grads)
{
    TT_ASSERT_MSG(!g->tail && !g->backward_done, "tt_graph_set_grad_heap on a recorded tape: "
                  "its gradients would be released into the wrong heap. HINT: set it right "
                  "after tt_graph_init or tt_graph_reset");
    TT_ASSERT_MSG(!grads || grads->device == g->device, "gradient heap '%s' is on %s, the graph "
                  "on %s", grads ? grads->name : "", grads ? tt_device_name(grads->device) : "",
                  tt_device_name(g->device));
    g->grads = grads;
    g->keep_grads = false;
}

void tt_graph_reset(tt_graph *g)
{
    tt_arena_reset(g->data);
    tt_arena_reset(g->meta);
    if (g->grads) tt_heap_reset(g->grads);
    g->tail = NULL;
    g->n_nodes = 0;
    g->backward_done = false;
}

bool tt_graph_set_no_grad(tt_graph *g, bool no_grad)
{
    bool old = g->no_grad;
    g->no_grad = no_grad;
    return old;
}

tt_var tt_var_leaf(tt_tensor val, tt_tensor grad, bool requires_grad)
{
    if (requires_grad) {
        TT_ASSERT_MSG(grad.data, "a leaf that requires grad needs a gradient buffer");
        tt_assert_same_shape(val.shape, grad.shape, "leaf value and gradient");
    }
    return (tt_var){.val = val, .grad = grad, .requires_grad = requires_grad};
}

tt_var *tt_var_alias(tt_graph *g, tt_tensor val, tt_tensor grad, bool requires_grad)
{
    tt_var *v = tt_arena_alloc(g->meta, sizeof *v);
    *v = tt_var_leaf(val, grad, requires_grad);
    return v;
}

tt_var *tt_var_new(tt_graph *g, tt_shape s, tt_dtype dt)
{
    tt_var *v = tt_arena_alloc(g->meta, sizeof *v);
    *v = (tt_var){.val = tt_arena_tensor(g->data, s, dt)};
    v->grad = tt_tensor_view(NULL, s, TT_REAL, g->device);
    return v;
}

tt_var *tt_var_from_host(tt_graph *g, tt_shape s, tt_dtype dt, const void *host, bool requires_grad)
{
    tt_var *v = tt_var_new(g, s, dt);
    g->be->from_host(v->val.data, host, tt_tensor_bytes(&v->val));
    TT_ASSERT_MSG(!requires_grad || dt == TT_REAL, "an int32 tensor cannot require grad");
    v->requires_grad = requires_grad;
    return v;
}

/* The buffer of v's gradient, allocated if it has none yet (then *fresh), uninitialised. */
static real *grad_buffer(tt_graph *g, tt_var *v, bool *fresh)
{
    *fresh = !v->grad.data;
    if (*fresh) {
        TT_ASSERT_MSG(!v->grad_released, "the gradient of this var was released when its node's "
                      "backward ran. HINT: set the graph's keep_grads before tt_backward to read "
                      "intermediate gradients afterwards");
        if (g->grads) {
            v->grad = tt_tensor_view(NULL, v->val.shape, TT_REAL, g->device);
            v->grad.data = tt_heap_alloc(g->grads, tt_tensor_bytes(&v->grad));
            v->grad_in_heap = true;
        } else {
            v->grad = tt_arena_tensor(g->data, v->val.shape, TT_REAL);
        }
    }
    return v->grad.data;
}

real *tt_var_grad(tt_graph *g, tt_var *v)
{
    bool fresh;
    real *grad = grad_buffer(g, v, &fresh);
    if (fresh) g->be->zero(grad, tt_tensor_bytes(&v->grad));
    return grad;
}

real *tt_var_grad_maybe_fresh(tt_graph *g, tt_var *v, bool *fresh)
{
    return grad_buffer(g, v, fresh);
}

real *tt_grad_or_null(tt_graph *g, tt_var *v)
{
    return v && v->requires_grad ? tt_var_grad(g, v) : NULL;
}

tt_node *tt_record(tt_graph *g, const char *op, tt_backward_fn backward, tt_var *out, tt_var *a,
                   tt_var *b, tt_var *c)
{
    if (!tt_graph_records(g, a) && !tt_graph_records(g, b) && !tt_graph_records(g, c))
        return NULL;
    TT_ASSERT_MSG(!g->backward_done, "%s: recording onto a tape that has already run backward; "
                  "call tt_graph_reset first", op);
    tt_node *n = tt_arena_alloc(g->meta, sizeof *n);
    *n = (tt_node){.prev = g->tail, .op = op, .backward = backward, .out = out, .in = {a, b, c}};
    out->requires_grad = true;
    g->tail = n;
    g->n_nodes++;
    return n;
}

void tt_backward(tt_graph *g, tt_var *loss) { tt_backward_seeded(g, loss, R(1)); }

void tt_backward_seeded(tt_graph *g, tt_var *loss, real seed)
{
    TT_ASSERT_MSG(!g->backward_done, "backward called twice on one tape: gradients would be "
                  "counted twice. HINT: tt_graph_reset between steps");
    TT_ASSERT_MSG(loss->val.n == 1, "backward needs a scalar loss, got %lld elements",
                  (long long)loss->val.n);
    TT_ASSERT_MSG(loss->requires_grad, "backward on a value that does not require grad "
                  "(no-grad mode, or no input requires grad)");
    g->backward_done = true;
    g->be->fill(tt_var_grad(g, loss), seed, 1);
    for (tt_node *n = g->tail; n; n = n->prev) {
        tt_var *out = n->out;
        if (!out->grad.data) continue;
        n->backward(g, n);
        /* every consumer of out is later on the tape and has run: its gradient is used up */
        if (out->grad_in_heap && !g->keep_grads) {
            tt_heap_free(g->grads, out->grad.data);
            out->grad.data = NULL;
            out->grad_in_heap = false;
            out->grad_released = true;
        }
    }
}
