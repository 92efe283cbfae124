/* px_memtrack.h — the executor's tracked allocator: every device buffer the
 * engine holds goes through it, so current and peak bytes per rank are exact
 * and broken down by kind (what the cost model predicts separately).  Host
 * buffers that stand for a GPU framework's host memory (the offloaded
 * optimizer state) go through it too, counted apart: they never enter the
 * device totals. */
#ifndef PX_MEMTRACK_H
#define PX_MEMTRACK_H

#include <stdbool.h>
#include <stdint.h>

#include "px_backend.h"

typedef enum {
    PX_MEM_WEIGHTS = 0, /* parameters the kernels read (fp32 storage: the master; bf16:
                         * the compute copy) */
    PX_MEM_GRADS,       /* fp32 gradients */
    PX_MEM_OPTIMIZER,   /* AdamW moments, and the fp32 master in bf16 storage (sharded
                         * under ZeRO 1-3) */
    PX_MEM_ACTIVATIONS, /* tensors stashed for backward (docs/executor.md lists them) */
    PX_MEM_BUFFERS,     /* embedding output, logits, loss, token ids */
    PX_MEM_TEMP,        /* work buffers freed within one operator (gathers, partial sums) */
    PX_MEM_KINDS
} px_mem_kind;

const char *px_mem_kind_name(px_mem_kind k); /* "weights", "grads", ... */

typedef struct {
    void *ptr;
    int64_t bytes;
    px_mem_kind kind; /* device blocks only */
    bool host;        /* from px_mem_alloc_host */
} px_mem_block;

typedef struct {
    px_backend *be;
    int64_t cur_bytes;
    int64_t peak_bytes;
    int64_t cur[PX_MEM_KINDS];
    int64_t at_peak[PX_MEM_KINDS]; /* breakdown at the moment of the total peak */
    int64_t host_bytes;            /* host blocks held now (none of the above) */
    int64_t host_peak_bytes;
    px_mem_block *live;            /* live blocks (a few hundred at most) */
    int n_live, cap_live;
} px_memtrack;

void px_mem_init(px_memtrack *t, px_backend *be);

/* Allocates zeroed device memory through the backend and counts it. */
px_status px_mem_alloc(px_memtrack *t, px_mem_kind kind, int64_t bytes, void **out,
                       px_error *err);

/* Allocates zeroed host memory (calloc) and counts it as host bytes only. */
px_status px_mem_alloc_host(px_memtrack *t, int64_t bytes, void **out, px_error *err);

/* Frees a block from px_mem_alloc or px_mem_alloc_host (NULL is ignored). */
void px_mem_free(px_memtrack *t, void *p);

/* Moves a live block to another kind (a work buffer kept for later becomes
 * an activation), without changing the total. */
void px_mem_set_kind(px_memtrack *t, void *p, px_mem_kind kind);

/* Restarts peak tracking from the current usage (after set-up, per step). */
void px_mem_reset_peak(px_memtrack *t);

/* Frees every live block and the bookkeeping. */
void px_mem_release_all(px_memtrack *t);

#endif
