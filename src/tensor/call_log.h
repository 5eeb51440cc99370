/* call_log.h: the calls of one training step as hashes, for the devices that check that a step
 * repeats a recorded one (backend.h's step bracket): cuda/backend.cu keeps the captured step's
 * calls and compares every replayed step's with them, the guard device (guard/backend.c) does
 * the same on the CPU from the second step on. A call's hash (FNV-1a) covers its slot and what
 * must not change between steps: device pointers, sizes, constants; the descriptors below by
 * their fields (never padding). C and C++ (the CUDA backend), header only. */
#ifndef TT_CALL_LOG_H
#define TT_CALL_LOG_H

#include "tensor/backend.h"

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TT_CALL_LOG_MAX 16384 /* calls compared one by one; past them, only their count */
#define TT_HASH_START 0xcbf29ce484222325ull

static inline uint64_t tt_hash_bytes(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
    return h;
}

#define TT_HASH_FIELD(h, x) ((h) = tt_hash_bytes((h), &(x), sizeof(x)))

static inline uint64_t tt_hash_attn_desc(uint64_t h, const tt_attn_desc *a)
{
    TT_HASH_FIELD(h, a->B), TT_HASH_FIELD(h, a->T), TT_HASH_FIELD(h, a->NH);
    TT_HASH_FIELD(h, a->HS), TT_HASH_FIELD(h, a->ldq), TT_HASH_FIELD(h, a->ldk);
    TT_HASH_FIELD(h, a->ldv), TT_HASH_FIELD(h, a->ldo), TT_HASH_FIELD(h, a->scale);
    TT_HASH_FIELD(h, a->causal), TT_HASH_FIELD(h, a->p), TT_HASH_FIELD(h, a->full);
    return h;
}

/* NULL hashes apart from any operation */
static inline uint64_t tt_hash_gemm_op(uint64_t h, const tt_gemm_op *g)
{
    const bool given = g != NULL;
    TT_HASH_FIELD(h, given);
    if (!g) return h;
    TT_HASH_FIELD(h, g->ta), TT_HASH_FIELD(h, g->tb), TT_HASH_FIELD(h, g->M);
    TT_HASH_FIELD(h, g->N), TT_HASH_FIELD(h, g->K), TT_HASH_FIELD(h, g->alpha);
    TT_HASH_FIELD(h, g->A), TT_HASH_FIELD(h, g->lda), TT_HASH_FIELD(h, g->B);
    TT_HASH_FIELD(h, g->ldb), TT_HASH_FIELD(h, g->beta), TT_HASH_FIELD(h, g->C);
    TT_HASH_FIELD(h, g->ldc);
    return h;
}

/* The cursor's stream, not its counter: that moves from step to step. */
static inline uint64_t tt_hash_rng(uint64_t h, tt_rng r)
{
    TT_HASH_FIELD(h, r.seed), TT_HASH_FIELD(h, r.stream);
    return h;
}

/* Which SGD update (the first step's, with momentum): fixed once recorded; its rate varies. */
static inline uint64_t tt_hash_sgd(uint64_t h, const tt_sgd_scalars *s)
{
    TT_HASH_FIELD(h, s->first), TT_HASH_FIELD(h, s->use_buf);
    return h;
}

/* One step's calls: `kept` (TT_CALL_LOG_MAX, the caller's) holds the recorded step's. */
typedef struct tt_call_log {
    uint64_t *kept;
    int64_t n, n_kept; /* this step's calls so far; the recorded step's */
} tt_call_log;

/* Call n of this step: kept (the recorded step), else compared; false when it differs from
 * the recorded step's call n, or that step had fewer. */
static inline bool tt_call_log_note(tt_call_log *l, uint64_t h, bool keep)
{
    const int64_t k = l->n++;
    if (k >= TT_CALL_LOG_MAX) return keep || k < l->n_kept;
    if (keep) l->kept[k] = h;
    return keep || (k < l->n_kept && l->kept[k] == h);
}

/* The end of a step: a recorded one keeps its count; a compared one must have made as many
 * calls. Either way the next step starts from call 0. */
static inline bool tt_call_log_end(tt_call_log *l, bool keep)
{
    const bool same = keep || l->n == l->n_kept;
    if (keep) l->n_kept = l->n;
    l->n = 0;
    return same;
}

#ifdef __cplusplus
}
#endif

#endif
