/* heap.c: the gradient heap (see heap.h). The live blocks are kept sorted by offset, so the
 * gaps are implicit (between one block's end and the next one's start) and a freed block merges
 * with the gaps on both sides by simply leaving the table. A backward pass keeps a handful of
 * gradients alive at a time, so the linear scans and the memmove of a table insert are cheap
 * next to the kernels that fill the blocks. */
#include "tensor/heap.h"
#include "tensor/backend.h"

#include <stdlib.h>
#include <string.h>

void tt_heap_init(tt_heap *h, const char *name, tt_device dev, size_t cap, int max_blocks)
{
    TT_ASSERT_MSG(max_blocks > 0, "heap '%s': a table of %d blocks", name, max_blocks);
    *h = (tt_heap){.name = name, .cap = cap, .max_blocks = max_blocks, .device = dev};
    h->base = tt_backend_get(dev)->alloc(cap);
    h->blocks = tt_xmalloc((size_t)max_blocks * sizeof *h->blocks);
}

void tt_heap_destroy(tt_heap *h)
{
    if (h->base) tt_backend_get(h->device)->free(h->base);
    free(h->blocks);
    *h = (tt_heap){.name = h->name, .device = h->device};
}

TT_NORETURN static void overflow(const tt_heap *h, size_t bytes, const char *why)
{
    tt_fatal(__FILE__, __LINE__,
             "heap '%s' overflow (%s): asked for %zu bytes with %zu of %zu in use in %d blocks "
             "(high-water %zu in use, %zu touched; table of %d blocks). HINT: the heap and its "
             "table are sized before the first step (tt_step_sizes_for in src/train/run/memory.c); "
             "give them more room or make the step smaller (batch size, sequence length)",
             h->name, why, bytes, h->used, h->cap, h->n_blocks, h->high_used, h->high_end,
             h->max_blocks);
}

void *tt_heap_alloc(tt_heap *h, size_t bytes)
{
    size_t size = bytes ? (bytes + TT_HEAP_ALIGN - 1) & ~(size_t)(TT_HEAP_ALIGN - 1)
                        : TT_HEAP_ALIGN;
    if (size < bytes) overflow(h, bytes, "size");
    if (h->n_blocks == h->max_blocks) overflow(h, bytes, "block table full");
    /* first fit: the gap before block i starts where block i-1 ends */
    size_t start = 0;
    int i = 0;
    for (; i < h->n_blocks; i++) {
        if (h->blocks[i].off - start >= size) break;
        start = h->blocks[i].off + h->blocks[i].size;
    }
    if (i == h->n_blocks && (start > h->cap || h->cap - start < size))
        overflow(h, bytes, "region full");
    memmove(h->blocks + i + 1, h->blocks + i, (size_t)(h->n_blocks - i) * sizeof *h->blocks);
    h->blocks[i] = (tt_heap_block){.off = start, .size = size};
    if (++h->n_blocks > h->high_blocks) h->high_blocks = h->n_blocks;
    h->used += size;
    if (h->used > h->high_used) h->high_used = h->used;
    if (start + size > h->high_end) h->high_end = start + size;
    return h->base + start;
}

void tt_heap_free(tt_heap *h, void *p)
{
    uintptr_t a = (uintptr_t)p, base = (uintptr_t)h->base;
    int lo = 0, hi = h->n_blocks - 1, at = -1;
    if (a >= base && a - base < h->cap) {
        size_t off = a - base;
        while (lo <= hi) { /* binary search by offset */
            int mid = lo + (hi - lo) / 2;
            if (h->blocks[mid].off == off) {
                at = mid;
                break;
            }
            if (h->blocks[mid].off < off) lo = mid + 1;
            else hi = mid - 1;
        }
    }
    TT_ASSERT_MSG(at >= 0, "heap '%s': free of %p, which is not a live block (a double free, or "
                  "memory from elsewhere; region %p + %zu, %d blocks live)", h->name, p,
                  (void *)h->base, h->cap, h->n_blocks);
    h->used -= h->blocks[at].size;
    memmove(h->blocks + at, h->blocks + at + 1, (size_t)(h->n_blocks - at - 1) * sizeof *h->blocks);
    h->n_blocks--;
}

void tt_heap_reset(tt_heap *h)
{
    h->n_blocks = 0;
    h->used = 0;
}
