/* cpu/backend.c: host memory and the CPU kernel table. */
#include "tensor/cpu/cpu.h"

#include <stdlib.h>
#include <string.h>

static void *cpu_alloc(size_t bytes)
{
    /* 64-byte alignment: cache lines, and AVX-512 loads in OpenBLAS. */
    size_t rounded = (bytes + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    TT_ASSERT_MSG(p, "out of memory: could not allocate %zu bytes on the CPU", bytes);
    return p;
}

static void cpu_free(void *p) { free(p); }
static void cpu_zero(void *p, size_t bytes) { memset(p, 0, bytes); }
static void cpu_copy(void *dst, const void *src, size_t bytes) { memmove(dst, src, bytes); }

static void cpu_fill(real *x, real value, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] = value;
}

const tt_backend tt_cpu_backend = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .zero = cpu_zero,
    .copy = cpu_copy,
    .to_host = cpu_copy,
    .from_host = cpu_copy,
    .fill = cpu_fill,
    .set_threads = tt_cpu_set_threads,
    .get_threads = tt_cpu_get_threads,
    .gemm = tt_cpu_gemm,
    .axpy = tt_cpu_axpy,
    .add_forward = tt_cpu_add_forward,
    .scale_forward = tt_cpu_scale_forward,
    .bias_forward = tt_cpu_bias_forward,
    .bias_backward = tt_cpu_bias_backward,
    .mul_forward = tt_cpu_mul_forward,
    .mul_backward = tt_cpu_mul_backward,
    .relu_forward = tt_cpu_relu_forward,
    .relu_backward = tt_cpu_relu_backward,
    .gelu_forward = tt_cpu_gelu_forward,
    .gelu_backward = tt_cpu_gelu_backward,
    .softmax_forward = tt_cpu_softmax_forward,
    .softmax_backward = tt_cpu_softmax_backward,
    .layernorm_forward = tt_cpu_layernorm_forward,
    .layernorm_backward = tt_cpu_layernorm_backward,
    .embedding_forward = tt_cpu_embedding_forward,
    .embedding_backward = tt_cpu_embedding_backward,
    .dropout_forward = tt_cpu_dropout_forward,
    .dropout_backward = tt_cpu_dropout_backward,
    .crossentropy_forward = tt_cpu_crossentropy_forward,
    .crossentropy_backward = tt_cpu_crossentropy_backward,
    .attention_forward = tt_cpu_attention_forward,
    .attention_backward = tt_cpu_attention_backward,
    .sum_forward = tt_cpu_sum_forward,
    .sum_backward = tt_cpu_sum_backward,
};
