/* tensor.h: shapes and tensors. A tensor is a view: contiguous, row-major, up to 4 dims, over
 * memory it does not own (an arena, a parameter buffer, or a caller's array). Element type is
 * `real` (float32 or float64 depending on the build) or int32 (token ids, targets, masks). */
#ifndef TT_TENSOR_H
#define TT_TENSOR_H

#include "tensor/common.h"
#include "tensor/real.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TT_MAX_DIMS 4

typedef enum { TT_REAL, TT_I32 } tt_dtype;
/* TT_GUARD: the CPU's kernels behind memory the host cannot touch outside a kernel call
 * (tensor/guard/): the tests' proof that nothing above src/tensor reads device memory. */
typedef enum { TT_CPU, TT_CUDA, TT_GUARD, TT_N_DEVICES } tt_device;

typedef struct tt_shape {
    int ndim;
    int d[TT_MAX_DIMS];
} tt_shape;

typedef struct tt_tensor {
    void *data;
    tt_shape shape;
    int64_t n; /* number of elements */
    tt_dtype dtype;
    tt_device device;
} tt_tensor;

tt_shape tt_shape1(int d0);
tt_shape tt_shape2(int d0, int d1);
tt_shape tt_shape3(int d0, int d1, int d2);
tt_shape tt_shape4(int d0, int d1, int d2, int d3);
int64_t tt_shape_numel(tt_shape s);
bool tt_shape_eq(tt_shape a, tt_shape b);
/* "[2,3,4]" into buf (at least TT_SHAPE_STR bytes); returns buf. */
#define TT_SHAPE_STR 64
const char *tt_shape_str(tt_shape s, char *buf);

size_t tt_dtype_size(tt_dtype dt);
/* A tensor over existing memory. */
tt_tensor tt_tensor_view(void *data, tt_shape s, tt_dtype dt, tt_device dev);
size_t tt_tensor_bytes(const tt_tensor *t);

/* Typed access; abort if the dtype does not match. */
real *tt_real(const tt_tensor *t);
int32_t *tt_i32(const tt_tensor *t);

/* Aborts with both shapes unless a and b have the same shape; `what` names the op. */
void tt_assert_same_shape(tt_shape a, tt_shape b, const char *what);

#ifdef __cplusplus
}
#endif

#endif
