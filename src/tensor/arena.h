/* arena.h: a bump allocator for everything a training step creates (activations, saved values,
 * tape nodes). Memory handed out lives until the next tt_arena_reset; nothing is freed one by one,
 * so a step allocates nothing from the system. The capacity is fixed at init: running past it is
 * a fatal error that names the arena, the sizes and the high-water mark. */
#ifndef TT_ARENA_H
#define TT_ARENA_H

#include "tensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TT_ARENA_ALIGN 64

typedef struct tt_arena {
    const char *name;
    char *base;
    size_t cap;
    size_t used;
    size_t high; /* most bytes ever in use at once */
    tt_device device;
} tt_arena;

/* Allocates `cap` bytes on `dev` once; the arena owns them until tt_arena_free. */
void tt_arena_init(tt_arena *a, const char *name, tt_device dev, size_t cap);
void tt_arena_free(tt_arena *a);
/* 64-byte aligned, uninitialised; aborts on overflow. */
void *tt_arena_alloc(tt_arena *a, size_t bytes);
/* A tensor in the arena, uninitialised. */
tt_tensor tt_arena_tensor(tt_arena *a, tt_shape s, tt_dtype dt);
/* Forgets every allocation; the high-water mark is kept. */
void tt_arena_reset(tt_arena *a);

#ifdef __cplusplus
}
#endif

#endif
