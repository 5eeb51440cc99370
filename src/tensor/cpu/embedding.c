/* cpu/embedding.c: row gather and its scatter-add.
 *   out[i] = weight[tokens[i]],  dweight[tokens[i]] += dout[i]  (a token seen twice gets both) */
#include "tensor/cpu/cpu.h"

#include <string.h>

/* out (N,C), tokens (N), weight (V,C) */
void tt_cpu_embedding_forward(real *out, const int32_t *tokens, const real *weight, int64_t N,
                              int C, int V)
{
    for (int64_t i = 0; i < N; i++) {
        int32_t t = tokens[i];
        TT_ASSERT_MSG(t >= 0 && t < V, "embedding: token %d at position %lld outside [0,%d)", t,
                      (long long)i, V);
        memcpy(out + i * C, weight + (int64_t)t * C, (size_t)C * sizeof(real));
    }
}

/* dweight (V,C), tokens (N), dout (N,C) */
void tt_cpu_embedding_backward(real *dweight, const int32_t *tokens, const real *dout, int64_t N,
                               int C)
{
    for (int64_t i = 0; i < N; i++) {
        real *dw = dweight + (int64_t)tokens[i] * C;
        const real *dy = dout + i * C;
        for (int c = 0; c < C; c++) dw[c] += dy[c];
    }
}
