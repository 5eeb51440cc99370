/* params.h: named parameters over one contiguous buffer, and their gradients over a second of the
 * same layout (llm.c's lesson): zeroing every gradient is one memset, an optimizer is one loop,
 * a checkpoint is one write, a host-device copy is one copy.
 *
 * Use: tt_params_add each parameter (name, shape), then tt_params_finalize once, which allocates
 * both buffers on the device and points every var into them. The vars returned by tt_params_add
 * stay valid (their data pointers are set by finalize) until tt_params_free. */
#ifndef TT_PARAMS_H
#define TT_PARAMS_H

#include "autograd/graph.h"
#include "tensor/safetensors.h"

#define TT_PARAM_NAME 96

typedef struct tt_param {
    char name[TT_PARAM_NAME];
    tt_var var;
    int64_t offset; /* in elements, into data and grad */
} tt_param;

typedef struct tt_params {
    tt_device device;
    tt_param **items;
    int n, cap;
    int64_t numel;
    real *data; /* all values, one buffer, owned */
    real *grad; /* all gradients, same layout, owned */
} tt_params;

void tt_params_init(tt_params *ps, tt_device dev);
tt_var *tt_params_add(tt_params *ps, const char *name, tt_shape s);
/* Allocates data and grad (grad zeroed, data uninitialised). */
void tt_params_finalize(tt_params *ps);
/* One memset of every gradient. */
void tt_params_zero_grad(tt_params *ps);
/* NULL when absent. */
tt_param *tt_params_find(const tt_params *ps, const char *name);
void tt_params_free(tt_params *ps);

/* The staging pair: every crossing of a buffer of the table's layout (values, gradients, an
 * optimizer's moments: numel reals on the table's device) between device and host. dev NULL
 * means the values, ps->data. host is caller memory of numel reals. */
void tt_params_to_host(const tt_params *ps, real *host, const real *dev);
void tt_params_from_host(const tt_params *ps, real *dev, const real *host);
/* A host buffer of numel reals (at least one), malloc'ed: free() it. With dev, a copy of that
 * device buffer (NULL dev and copy: the values); else zeroed. */
real *tt_params_host_alloc(const tt_params *ps, const real *dev, bool copy);

/* Reads every parameter from the tensor named <prefix><name> in f (F32 or F64, converted to
 * real; shapes must match exactly) into host, a host buffer of the table's layout. With
 * `strict`, a tensor under the prefix that is no parameter is an error too (PyTorch's
 * load_state_dict(strict=True)). On error returns -1 with err naming the tensor; host may then
 * hold part of the values. */
int tt_params_read(const tt_params *ps, real *host, const tt_st_file *f, const char *prefix,
                   bool strict, char *err, size_t errlen);
/* tt_params_read into a staging buffer, then one copy into dst, a device buffer of the table's
 * layout (NULL: the values, ps->data; or the gradients, an optimizer's moments). On error
 * returns -1 with err naming the tensor and leaves dst unchanged. */
int tt_params_load(tt_params *ps, real *dst, const tt_st_file *f, const char *prefix,
                   bool strict, char *err, size_t errlen);
/* Adds every parameter's slice of host (a HOST buffer of the table's layout, e.g. from
 * tt_params_host_alloc) to w as <prefix><name>, in table order, as TT_ST_REAL. Referenced,
 * not copied: keep host unchanged and alive until the save. */
void tt_params_write(const tt_params *ps, const real *host, tt_st_writer *w, const char *prefix);

#endif
