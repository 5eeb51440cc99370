/* graph.h: the tape. A tt_var is a value and (once something flows into it) a gradient; every
 * differentiable op appends a tt_node that remembers its inputs, its output, what it saved and
 * its backward function. tt_backward walks the tape in reverse.
 *
 * Lifetime: vars, nodes, values and saved tensors created while recording live in the graph's
 * two arenas until tt_graph_reset (once per training step): tensor data in `data` (on the
 * device), vars and nodes in `meta` (always host memory). Keeping them apart is needed for a
 * GPU, and on the CPU it keeps bookkeeping writes off the cache lines next to a gemm's output
 * (measured: ~6% on a 512x64x64 sgemm at 2 threads). Gradients the graph allocates (those of
 * intermediates) live in `data` too, unless a gradient heap is set (tt_graph_set_grad_heap):
 * then each comes from the heap and tt_backward releases it as soon as the node that produced
 * the var has run its backward (every consumer of a var comes later on the tape, so its
 * gradient is complete and used up by then), which keeps only a few of them alive at a time
 * instead of all. Leaf vars made with tt_var_leaf (parameters, gradient-check inputs) live as
 * long as their caller's memory and keep their gradients across resets. */
#ifndef TT_GRAPH_H
#define TT_GRAPH_H

#include "tensor/arena.h"
#include "tensor/backend.h"
#include "tensor/heap.h"
#include "tensor/rng.h"

typedef struct tt_var {
    tt_tensor val;
    tt_tensor grad; /* grad.data is NULL until a gradient flows in (intermediates) */
    bool requires_grad;
    bool grad_in_heap;  /* grad.data is a block of the graph's gradient heap */
    bool grad_released; /* tt_backward gave that block back: grad.data is NULL for good */
} tt_var;

typedef struct tt_graph tt_graph;
typedef struct tt_node tt_node;
typedef void (*tt_backward_fn)(tt_graph *g, tt_node *node);

#define TT_NODE_INPUTS 3

struct tt_node {
    tt_node *prev;
    const char *op;
    tt_backward_fn backward;
    tt_var *out;
    tt_var *in[TT_NODE_INPUTS]; /* unused slots are NULL */
    tt_tensor saved[2];         /* what backward needs beyond inputs and output */
    real f[2];                  /* scalar arguments (scale, p, eps) */
    int i[4];                   /* integer arguments (transposes, sizes) */
};

struct tt_graph {
    tt_arena *data; /* tensor values, saved tensors, gradients: on the device */
    tt_arena *meta; /* tt_var and tt_node structs: host memory */
    const tt_backend *be;
    tt_device device;
    tt_node *tail;
    int n_nodes;
    bool no_grad;       /* record nothing; outputs do not require grad */
    bool training;      /* dropout active */
    bool backward_done; /* set by tt_backward; cleared by tt_graph_reset */
    tt_rng *rng;        /* dropout masks; may be NULL when no dropout is used */
    tt_heap *grads;     /* intermediate gradients, or NULL: they are then in `data` */
    bool keep_grads;    /* with a heap: release nothing until tt_graph_reset (callers that
                           read an intermediate's gradient after tt_backward) */
    int part, parts;    /* data parallel: the batch is share `part` of `parts` equal shares of
                           the whole batch (0 of 1 on one process; see tt_graph_take) */
};

/* The graph does not own the arenas or the rng; meta must be a CPU arena distinct from data. */
void tt_graph_init(tt_graph *g, tt_arena *data, tt_arena *meta, tt_rng *rng);
/* Intermediate gradients from `grads` (a heap on the data arena's device, not owned; NULL for
 * the arena) from the next recording on; keep_grads is left false. Only on an empty tape. */
void tt_graph_set_grad_heap(tt_graph *g, tt_heap *grads);
/* The rng cursor of a draw of n elements for a tensor whose leading dimension is the batch
 * (dropout masks): the whole batch's draw (n * parts elements) is reserved, and the returned
 * cursor is this share's part of it, elements part * n on. So a mask element depends on the
 * example's place in the whole batch, never on how many processes share it. */
tt_rng tt_graph_take(tt_graph *g, int64_t n);
/* Forget the tape and everything allocated for it (a reset of both arenas and the heap). */
void tt_graph_reset(tt_graph *g);
/* Returns the previous value. */
bool tt_graph_set_no_grad(tt_graph *g, bool no_grad);

/* A leaf over caller-owned value and gradient memory (grad.data may be NULL when
 * requires_grad is false). */
tt_var tt_var_leaf(tt_tensor val, tt_tensor grad, bool requires_grad);
/* tt_var_leaf, allocated in the meta arena: a var over memory the caller owns, e.g. the first
 * T rows of a position table (its gradient is the table's own, so no node is needed) or a
 * constant on the device. */
tt_var *tt_var_alias(tt_graph *g, tt_tensor val, tt_tensor grad, bool requires_grad);
/* An arena var holding a copy of host data (a constant unless requires_grad). */
tt_var *tt_var_from_host(tt_graph *g, tt_shape s, tt_dtype dt, const void *host, bool requires_grad);
/* A fresh arena var of the given shape (uninitialised value, no gradient yet). */
tt_var *tt_var_new(tt_graph *g, tt_shape s, tt_dtype dt);
/* The gradient buffer of v, allocated (in the gradient heap if set, else the arena) and zeroed
 * on first use. Aborts for a var whose gradient tt_backward already released. */
real *tt_var_grad(tt_graph *g, tt_var *v);
/* The gradient buffer of v for a kernel that can either add or write: *fresh is set when it
 * was just allocated, and then it is NOT zeroed, so the kernel must write every element
 * (saves a memset and a read of the zeros). */
real *tt_var_grad_maybe_fresh(tt_graph *g, tt_var *v, bool *fresh);
/* The gradient buffer of v if v needs one, else NULL: what backward functions pass to kernels. */
real *tt_grad_or_null(tt_graph *g, tt_var *v);

/* Whether an op on input v records a node on g (tt_record's test, for an op that must know
 * before its kernels run whether to save what its backward needs). */
static inline bool tt_graph_records(const tt_graph *g, const tt_var *v)
{
    return !g->no_grad && v && v->requires_grad;
}

/* Append a node for `op` producing `out` from up to three inputs, if recording: when the graph
 * is in no-grad mode or no input requires a gradient, nothing is recorded and NULL returned. */
tt_node *tt_record(tt_graph *g, const char *op, tt_backward_fn backward, tt_var *out, tt_var *a,
                   tt_var *b, tt_var *c);

/* Seeds d(loss)/d(loss) = 1 and runs every node's backward in reverse order. `loss` must hold
 * one element. A second call before tt_graph_reset aborts: the tape's gradients already hold
 * one pass, and a second would silently double them. With a gradient heap and !keep_grads,
 * every heap gradient of a node's output (the loss's included) is released right after that
 * node's backward and its grad.data set to NULL: afterwards only leaf gradients (parameters,
 * caller-owned buffers, and arena vars made to require grad, which have no node) are readable. */
void tt_backward(tt_graph *g, tt_var *loss);
/* The same with d(loss)/d(loss) = seed: a data-parallel rank's loss is the mean over its own
 * targets, and seed = its targets / the whole batch's makes the summed gradients the whole
 * batch's mean's. */
void tt_backward_seeded(tt_graph *g, tt_var *loss, real seed);

#endif
