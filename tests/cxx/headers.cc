/* headers.cc: the tensor headers a CUDA (.cu, so C++) file of the backend will include, compiled
 * as C++ by `make header-check` (tests/cxx/check.sh), float32 and float64. Each guarded header
 * must parse as C++ and declare its functions with C linkage: the object this file compiles to
 * calls one function of each, and check.sh fails on any mangled (C++) name among its references.
 * tensor/backend.h too (the kernel table a CUDA backend fills, its kernels listed in
 * tensor/kernels.h), and tensor/kernel_math.h (the element math the CUDA kernels share with the
 * CPU's). */
#include "tensor/philox.h"
#include "tensor/real.h"
#include "tensor/common.h"
#include "tensor/tensor.h"
#include "tensor/rng.h"
#include "tensor/arena.h"
#include "tensor/heap.h"
#include "tensor/cpu/pool.h"
#include "tensor/cpu/cpu.h"
#include "tensor/kernels.h"
#include "tensor/backend.h"
#include "tensor/call_log.h"
#include "tensor/cuda/attention_ref.h"
#include "tensor/kernel_math.h"

/* Compiled, never run: the calls are there for the references they put into the object. */
extern "C" void tt_header_check(tt_arena *a, tt_heap *h, uint8_t *keep);
void tt_header_check(tt_arena *a, tt_heap *h, uint8_t *keep)
{
    tt_rng r;
    tt_rng_init(&r, 1, 2);
    tt_rng at = tt_rng_take(&r, 64);
    tt_cpu_keep_mask(keep, &at, 0, 64, R(0.25));
    tt_rng_keep_at(&at, 0, tt_philox_keep_threshold(0.25), 1, keep);
    real *x = (real *)tt_arena_alloc(a, sizeof(real));
    x[0] = tt_rng_word_uniform(tt_rng_word(1, 2, 3)) + (real)tt_shape_numel(tt_shape1(2));
    tt_heap_free(h, tt_heap_alloc(h, 64));
    tt_xmalloc((size_t)tt_pool_threads());
    tt_backend_get(TT_GUARD)->zero(keep, 1);
    /* a kernel declared from tensor/kernels.h's list */
    tt_cpu_axpy(x, R(1), x, 1);
    /* the header-only core from C++, as the host code of a .cu file calls it */
    uint32_t w = tt_philox_word(1, 2, 3);
    keep[0] = (uint8_t)tt_philox_keep(w, tt_philox_keep_threshold((double)x[0]));
    /* and kernel_math.h's element math, as a .cu file's host code may call it */
    tt_adamw_scalars s = {R(1), R(0.9), R(0.1), R(0.999), R(0.001), R(0.01), R(1), R(1e-8)};
    real m = R(0), v = R(0);
    tt_adamw_update(&x[0], &m, &v, tt_gelu_value(x[0]) + tt_gelu_deriv(x[0]), &s);
    keep[1] = (uint8_t)tt_dropout_keep4(&at, 0, tt_philox_keep_threshold(0.25));
}
