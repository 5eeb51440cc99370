/* params_io.c: a parameter table to and from the host and safetensors, by name, so a checkpoint
 * or a PyTorch state_dict maps onto the flat buffer without renaming (see params.h). Every
 * byte that crosses between the table's device and the host goes through the staging pair
 * here, tt_params_to_host and tt_params_from_host. */
#include "autograd/params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tt_params_to_host(const tt_params *ps, real *host, const real *dev)
{
    TT_ASSERT_MSG(ps->data, "tt_params_to_host before tt_params_finalize");
    tt_backend_get(ps->device)->to_host(host, dev ? dev : ps->data,
                                        (size_t)ps->numel * sizeof(real));
}

void tt_params_from_host(const tt_params *ps, real *dev, const real *host)
{
    TT_ASSERT_MSG(ps->data, "tt_params_from_host before tt_params_finalize");
    tt_backend_get(ps->device)->from_host(dev ? dev : ps->data, host,
                                          (size_t)ps->numel * sizeof(real));
}

real *tt_params_host_alloc(const tt_params *ps, const real *dev, bool copy)
{
    real *host = tt_xcalloc((size_t)ps->numel + 1, sizeof(real));
    if (copy) tt_params_to_host(ps, host, dev);
    return host;
}

static bool shape_matches(const tt_st_entry *e, tt_shape s)
{
    if (e->ndim != s.ndim) return false;
    for (int k = 0; k < s.ndim; k++)
        if (e->shape[k] != s.d[k]) return false;
    return true;
}

int tt_params_read(const tt_params *ps, real *host, const tt_st_file *f, const char *prefix,
                   bool strict, char *err, size_t errlen)
{
    size_t plen = strlen(prefix);
    char name[2 * TT_PARAM_NAME];
    for (int i = 0; i < ps->n; i++) {
        const tt_param *p = ps->items[i];
        snprintf(name, sizeof name, "%s%s", prefix, p->name);
        const tt_st_entry *e = tt_st_find(f, name);
        char a[TT_SHAPE_STR], b[64];
        if (!e)
            return tt_errorf(err, errlen, "tensor '%s' is missing (the model needs %d "
                             "parameters)", name, ps->n);
        if (!shape_matches(e, p->var.val.shape)) {
            tt_st_shape_str(e->ndim, e->shape, b, sizeof b);
            return tt_errorf(err, errlen, "tensor '%s' has shape %s; the model needs %s", name,
                             b, tt_shape_str(p->var.val.shape, a));
        }
        if (e->dtype != TT_ST_F32 && e->dtype != TT_ST_F64)
            return tt_errorf(err, errlen, "tensor '%s' has dtype %s; parameters must be F32 or "
                             "F64", name, tt_st_dtype_name(e->dtype));
        if (tt_st_read_real(e, host + p->offset, p->var.val.n, err, errlen)) return -1;
    }
    if (strict)
        for (int k = 0; k < f->n; k++) {
            const char *n = f->entries[k].name;
            if (strncmp(n, prefix, plen) == 0 && !tt_params_find(ps, n + plen))
                return tt_errorf(err, errlen, "tensor '%s' is not a parameter of this model", n);
        }
    return 0;
}

int tt_params_load(tt_params *ps, real *dst, const tt_st_file *f, const char *prefix,
                   bool strict, char *err, size_t errlen)
{
    TT_ASSERT_MSG(ps->data, "tt_params_load before tt_params_finalize");
    real *host = tt_params_host_alloc(ps, NULL, false);
    int rc = tt_params_read(ps, host, f, prefix, strict, err, errlen);
    /* only now, so a failed load leaves the device buffer as it was */
    if (!rc) tt_params_from_host(ps, dst, host);
    free(host);
    return rc;
}

void tt_params_write(const tt_params *ps, const real *host, tt_st_writer *w, const char *prefix)
{
    TT_ASSERT_MSG(host, "tt_params_write: a host buffer is needed (tt_params_host_alloc)");
    char name[2 * TT_PARAM_NAME];
    for (int i = 0; i < ps->n; i++) {
        const tt_param *p = ps->items[i];
        int64_t shape[TT_ST_MAX_DIMS];
        for (int k = 0; k < p->var.val.shape.ndim; k++) shape[k] = p->var.val.shape.d[k];
        snprintf(name, sizeof name, "%s%s", prefix, p->name);
        tt_st_writer_add(w, name, TT_ST_REAL, p->var.val.shape.ndim, shape, host + p->offset);
    }
}
