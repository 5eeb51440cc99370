/* heap.h: a first-fit allocator over one fixed region, for memory that dies before the step
 * ends: the backward pass's intermediate gradients, each released as soon as its producing node
 * has run (autograd/graph.c). The region is allocated once at init through the device's backend
 * and may be device memory, so every piece of bookkeeping (a table of live blocks, sorted by
 * offset) lives in host memory and the region itself is never read or written here. Nothing is
 * allocated from the system after init; overflow of the region or of the block table, a double
 * free and a free of a foreign pointer are fatal errors naming the heap and its sizes. */
#ifndef TT_HEAP_H
#define TT_HEAP_H

#include "tensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TT_HEAP_ALIGN 64

typedef struct tt_heap_block {
    size_t off, size; /* size rounded up to TT_HEAP_ALIGN */
} tt_heap_block;

typedef struct tt_heap {
    const char *name;
    char *base; /* cap bytes on `device`, owned */
    size_t cap;
    tt_heap_block *blocks; /* host, [max_blocks], live blocks sorted by offset */
    int n_blocks, max_blocks;
    int high_blocks;  /* most live blocks at once: what the table must hold */
    size_t used;      /* bytes in live blocks */
    size_t high_used; /* most bytes ever in live blocks at once */
    size_t high_end;  /* highest end offset ever handed out: the part of the region touched */
    tt_device device;
} tt_heap;

/* Allocates `cap` bytes on `dev` and a table of `max_blocks` live blocks, once; the heap owns
 * them until tt_heap_destroy. */
void tt_heap_init(tt_heap *h, const char *name, tt_device dev, size_t cap, int max_blocks);
void tt_heap_destroy(tt_heap *h);
/* The lowest gap that holds `bytes` (rounded up to 64; 0 counts as 64): 64-byte aligned,
 * uninitialised, valid until tt_heap_free of it or tt_heap_reset. Aborts when nothing fits. */
void *tt_heap_alloc(tt_heap *h, size_t bytes);
/* Releases a block tt_heap_alloc returned; its bytes join the neighbouring gaps. */
void tt_heap_free(tt_heap *h, void *p);
/* Forgets every block at once; the high-water marks are kept. */
void tt_heap_reset(tt_heap *h);

#ifdef __cplusplus
}
#endif

#endif
