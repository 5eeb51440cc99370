/* cpu/embedding.c: row gather and its scatter-add.
 *   out[i] = weight[tokens[i]],  dweight[tokens[i]] += dout[i]  (a token seen twice gets both)
 * The gather splits rows over the pool; the scatter splits columns, so no two threads add to
 * one element and each sum runs over the rows in order, as on one thread. */
#include "tensor/cpu/cpu.h"
#include "tensor/cpu/pool.h"

#include <string.h>

typedef struct emb {
    real *y;
    const real *w;
    const int32_t *t;
    int64_t N;
    int C;
} emb;

TT_VEC static void gather_rows(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const emb *e = ctx;
    for (int64_t i = lo; i < hi; i++)
        memcpy(e->y + i * e->C, e->w + (int64_t)e->t[i] * e->C, (size_t)e->C * sizeof(real));
}

/* out (N,C), tokens (N), weight (V,C) */
void tt_cpu_embedding_forward(real *out, const int32_t *tokens, const real *weight, int64_t N,
                              int C, int V)
{
    for (int64_t i = 0; i < N; i++)
        TT_ASSERT_MSG(tokens[i] >= 0 && tokens[i] < V, "embedding: token %d at position %lld "
                      "outside [0,%d)", tokens[i], (long long)i, V);
    emb e = {.y = out, .w = weight, .t = tokens, .N = N, .C = C};
    tt_pool_for(N, 1, tt_cpu_row_grain(C), gather_rows, &e);
}

TT_VEC static void scatter_cols(void *ctx, int64_t lo, int64_t hi, int tid)
{
    (void)tid;
    const emb *e = ctx;
    for (int64_t i = 0; i < e->N; i++) {
        real *dw = e->y + (int64_t)e->t[i] * e->C;
        const real *dy = e->w + i * e->C;
        for (int64_t c = lo; c < hi; c++) dw[c] += dy[c];
    }
}

/* dweight (V,C), tokens (N), dout (N,C) */
void tt_cpu_embedding_backward(real *dweight, const int32_t *tokens, const real *dout, int64_t N,
                               int C)
{
    emb e = {.y = dweight, .w = dout, .t = tokens, .N = N, .C = C};
    tt_pool_for(C, TT_CPU_ALIGN, N * C >= TT_CPU_GRAIN ? TT_CPU_ALIGN : C, scatter_cols, &e);
}
