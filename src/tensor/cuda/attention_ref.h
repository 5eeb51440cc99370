/* cuda/attention_ref.h: the unfused attention forward of attention_ref.cu (cuBLAS gemms and a
 * masked-softmax kernel), the reference the CUDA tests and the GPU benchmark compare the fused
 * kernels of attention.cu against. C linkage, no CUDA header: C tests include it. */
#ifndef TT_CUDA_ATTENTION_REF_H
#define TT_CUDA_ATTENTION_REF_H

#include "tensor/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out (B,T,ldo) = P V, att (B,NH,T,T) = P = softmax(mask(scale Q K^T)) with the masks and the
 * all-masked-row rule of attention_forward; q, k, v (B,T,ld*) read at head h's columns; pad
 * (B,T) or NULL. Device pointers, queued on tt_cuda_stream(). No dropout: a->p must be 0. */
void tt_cuda_attention_reference_forward(real *out, real *att, const real *q, const real *k,
                                         const real *v, const int32_t *pad, const tt_attn_desc *a);

#ifdef __cplusplus
}
#endif

#endif
