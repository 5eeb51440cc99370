/* arena.c: the step arena (see arena.h). */
#include "tensor/arena.h"
#include "tensor/backend.h"

void tt_arena_init(tt_arena *a, const char *name, tt_device dev, size_t cap)
{
    *a = (tt_arena){.name = name, .cap = cap, .device = dev};
    a->base = tt_backend_get(dev)->alloc(cap);
}

void tt_arena_free(tt_arena *a)
{
    if (a->base) tt_backend_get(a->device)->free(a->base);
    a->base = NULL;
    a->cap = a->used = 0;
}

void *tt_arena_alloc(tt_arena *a, size_t bytes)
{
    size_t start = (a->used + TT_ARENA_ALIGN - 1) & ~(size_t)(TT_ARENA_ALIGN - 1);
    TT_ASSERT_MSG(start <= a->cap && bytes <= a->cap - start,
                  "arena '%s' overflow: asked for %zu bytes with %zu of %zu in use "
                  "(high-water %zu). HINT: the arena is sized before the first step; give it "
                  "more capacity or make the step smaller (batch size, sequence length)",
                  a->name, bytes, a->used, a->cap, a->high);
    a->used = start + bytes;
    if (a->used > a->high) a->high = a->used;
    return a->base + start;
}

tt_tensor tt_arena_tensor(tt_arena *a, tt_shape s, tt_dtype dt)
{
    tt_tensor t = tt_tensor_view(NULL, s, dt, a->device);
    t.data = tt_arena_alloc(a, tt_tensor_bytes(&t));
    return t;
}

void tt_arena_reset(tt_arena *a) { a->used = 0; }
