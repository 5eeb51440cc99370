/* tensor.c: shape helpers and tensor views. */
#include "tensor/tensor.h"

#include <stdio.h>
#include <string.h>

static tt_shape shape_make(int ndim, const int *d)
{
    tt_shape s = {.ndim = ndim};
    for (int i = 0; i < ndim; i++) {
        TT_ASSERT_MSG(d[i] >= 0, "negative dimension %d at axis %d", d[i], i);
        s.d[i] = d[i];
    }
    return s;
}

tt_shape tt_shape1(int d0) { return shape_make(1, (int[]){d0}); }
tt_shape tt_shape2(int d0, int d1) { return shape_make(2, (int[]){d0, d1}); }
tt_shape tt_shape3(int d0, int d1, int d2) { return shape_make(3, (int[]){d0, d1, d2}); }
tt_shape tt_shape4(int d0, int d1, int d2, int d3) { return shape_make(4, (int[]){d0, d1, d2, d3}); }

int64_t tt_shape_numel(tt_shape s)
{
    int64_t n = 1;
    for (int i = 0; i < s.ndim; i++) n *= s.d[i];
    return n;
}

bool tt_shape_eq(tt_shape a, tt_shape b)
{
    if (a.ndim != b.ndim) return false;
    for (int i = 0; i < a.ndim; i++)
        if (a.d[i] != b.d[i]) return false;
    return true;
}

const char *tt_shape_str(tt_shape s, char *buf)
{
    int len = snprintf(buf, TT_SHAPE_STR, "[");
    for (int i = 0; i < s.ndim && len < TT_SHAPE_STR; i++)
        len += snprintf(buf + len, (size_t)(TT_SHAPE_STR - len), i ? ",%d" : "%d", s.d[i]);
    if (len < TT_SHAPE_STR) snprintf(buf + len, (size_t)(TT_SHAPE_STR - len), "]");
    return buf;
}

size_t tt_dtype_size(tt_dtype dt) { return dt == TT_REAL ? sizeof(real) : sizeof(int32_t); }

tt_tensor tt_tensor_view(void *data, tt_shape s, tt_dtype dt, tt_device dev)
{
    TT_ASSERT(s.ndim >= 0 && s.ndim <= TT_MAX_DIMS);
    return (tt_tensor){.data = data, .shape = s, .n = tt_shape_numel(s), .dtype = dt, .device = dev};
}

size_t tt_tensor_bytes(const tt_tensor *t) { return (size_t)t->n * tt_dtype_size(t->dtype); }

real *tt_real(const tt_tensor *t)
{
    TT_ASSERT_MSG(t->dtype == TT_REAL, "tensor is int32 where a real tensor is needed");
    return t->data;
}

int32_t *tt_i32(const tt_tensor *t)
{
    TT_ASSERT_MSG(t->dtype == TT_I32, "tensor is real where an int32 tensor is needed");
    return t->data;
}

void tt_assert_same_shape(tt_shape a, tt_shape b, const char *what)
{
    char sa[TT_SHAPE_STR], sb[TT_SHAPE_STR];
    TT_ASSERT_MSG(tt_shape_eq(a, b), "%s: shape mismatch %s vs %s", what, tt_shape_str(a, sa),
                  tt_shape_str(b, sb));
}
