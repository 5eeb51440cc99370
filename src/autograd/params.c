/* params.c: the flat parameter and gradient buffers (see params.h). */
#include "autograd/params.h"

#include <stdlib.h>
#include <string.h>

void tt_params_init(tt_params *ps, tt_device dev) { *ps = (tt_params){.device = dev}; }

tt_var *tt_params_add(tt_params *ps, const char *name, tt_shape s)
{
    TT_ASSERT_MSG(!ps->data, "tt_params_add('%s') after tt_params_finalize", name);
    TT_ASSERT_MSG(strlen(name) < TT_PARAM_NAME, "parameter name too long: %s", name);
    TT_ASSERT_MSG(!tt_params_find(ps, name), "parameter '%s' added twice", name);
    if (ps->n == ps->cap) {
        ps->cap = ps->cap ? 2 * ps->cap : 16;
        ps->items = tt_xrealloc(ps->items, (size_t)ps->cap * sizeof *ps->items);
    }
    tt_param *p = tt_xcalloc(1, sizeof *p);
    memcpy(p->name, name, strlen(name) + 1);
    p->offset = ps->numel;
    p->var = tt_var_leaf(tt_tensor_view(NULL, s, TT_REAL, ps->device),
                         tt_tensor_view(NULL, s, TT_REAL, ps->device), false);
    /* Each parameter starts on a 16-element boundary (64 bytes in float32): aligned rows for
     * the kernels at the cost of a few padding elements. */
    ps->numel += (tt_shape_numel(s) + 15) & ~(int64_t)15;
    ps->items[ps->n++] = p;
    return &p->var;
}

void tt_params_finalize(tt_params *ps)
{
    TT_ASSERT_MSG(!ps->data, "tt_params_finalize called twice");
    const tt_backend *be = tt_backend_get(ps->device);
    size_t bytes = (size_t)ps->numel * sizeof(real);
    ps->data = be->alloc(bytes);
    ps->grad = be->alloc(bytes);
    be->zero(ps->data, bytes);
    be->zero(ps->grad, bytes);
    for (int i = 0; i < ps->n; i++) {
        tt_param *p = ps->items[i];
        p->var.val.data = ps->data + p->offset;
        p->var.grad.data = ps->grad + p->offset;
        p->var.requires_grad = true;
    }
}

void tt_params_zero_grad(tt_params *ps)
{
    TT_ASSERT_MSG(ps->grad, "tt_params_zero_grad before tt_params_finalize");
    tt_backend_get(ps->device)->zero(ps->grad, (size_t)ps->numel * sizeof(real));
}

tt_param *tt_params_find(const tt_params *ps, const char *name)
{
    for (int i = 0; i < ps->n; i++)
        if (strcmp(ps->items[i]->name, name) == 0) return ps->items[i];
    return NULL;
}

void tt_params_free(tt_params *ps)
{
    const tt_backend *be = tt_backend_get(ps->device);
    if (ps->data) be->free(ps->data);
    if (ps->grad) be->free(ps->grad);
    for (int i = 0; i < ps->n; i++) free(ps->items[i]);
    free(ps->items);
    *ps = (tt_params){.device = ps->device};
}
