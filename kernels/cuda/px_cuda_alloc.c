/* px_cuda_alloc.c — tracked stream-ordered device allocator (see header).
 * Sizes are kept in an open-addressing table keyed by the block address
 * (linear probing, backward-shift deletion), so px_cuda_free needs no size. */
#include "px_cuda_alloc.h"

#include <stdlib.h>

#include "px_cuda_status.h"

typedef struct {
    uintptr_t ptr; /* 0 = empty slot */
    int64_t n_bytes;
} slot;

struct px_cuda_alloc {
    cudaStream_t stream;
    cudaMemPool_t pool;
    slot *slots;
    int64_t cap;   /* power of two */
    int64_t count;
    int64_t current_bytes;
    int64_t peak_bytes;
};

static int64_t hash_slot(uintptr_t p, int64_t cap)
{
    /* Blocks are 256-aligned: drop those bits, then mix (splitmix64 finaliser). */
    uint64_t x = (uint64_t)p >> 8;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 29;
    return (int64_t)(x & (uint64_t)(cap - 1));
}

static void table_put(slot *slots, int64_t cap, uintptr_t p, int64_t n)
{
    int64_t i = hash_slot(p, cap);
    while (slots[i].ptr)
        i = (i + 1) & (cap - 1);
    slots[i].ptr = p;
    slots[i].n_bytes = n;
}

static px_status grow(px_cuda_alloc *a, px_error *err)
{
    int64_t cap = a->cap ? a->cap * 2 : 1024;
    slot *s = calloc((size_t)cap, sizeof *s);
    if (!s)
        return PX_FAIL(err, PX_ERR_NOMEM, "device allocator: host table of %lld slots",
                       (long long)cap);
    for (int64_t i = 0; i < a->cap; i++)
        if (a->slots[i].ptr)
            table_put(s, cap, a->slots[i].ptr, a->slots[i].n_bytes);
    free(a->slots);
    a->slots = s;
    a->cap = cap;
    return PX_OK;
}

px_status px_cuda_alloc_new(cudaStream_t stream, px_cuda_alloc **out, px_error *err)
{
    *out = NULL;
    px_cuda_alloc *a = calloc(1, sizeof *a);
    if (!a)
        return PX_FAIL(err, PX_ERR_NOMEM, "device allocator");
    a->stream = stream;
    int dev = 0;
    px_status st = px_cuda_status(cudaGetDevice(&dev), "cudaGetDevice", __FILE__, __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_status(cudaDeviceGetDefaultMemPool(&a->pool, dev),
                            "cudaDeviceGetDefaultMemPool", __FILE__, __LINE__, err);
    if (st == PX_OK) {
        /* Keep freed memory in the pool: a training step frees and reallocates
         * the same sizes every micro-batch; returning them to the driver at
         * each synchronisation would cost a cudaMalloc per block per step. */
        uint64_t keep = UINT64_MAX;
        st = px_cuda_status(cudaMemPoolSetAttribute(a->pool, cudaMemPoolAttrReleaseThreshold,
                                                    &keep),
                            "cudaMemPoolSetAttribute(release threshold)", __FILE__, __LINE__,
                            err);
    }
    if (st == PX_OK)
        st = grow(a, err);
    if (st != PX_OK) {
        free(a->slots);
        free(a);
        return st;
    }
    *out = a;
    return PX_OK;
}

void px_cuda_alloc_delete(px_cuda_alloc *a)
{
    if (!a)
        return;
    for (int64_t i = 0; i < a->cap; i++)
        if (a->slots[i].ptr)
            (void)cudaFreeAsync((void *)a->slots[i].ptr, a->stream);
    (void)cudaStreamSynchronize(a->stream);
    free(a->slots);
    free(a);
}

px_status px_cuda_malloc(px_cuda_alloc *a, int64_t n_bytes, void **out, px_error *err)
{
    *out = NULL;
    if (n_bytes < 0)
        return PX_FAIL(err, PX_ERR_INVALID, "device allocation of %lld bytes: must be >= 0",
                       (long long)n_bytes);
    if (n_bytes == 0)
        return PX_OK;
    if ((a->count + 1) * 2 > a->cap)
        PX_TRY(grow(a, err));
    void *p = NULL;
    cudaError_t e = cudaMallocAsync(&p, (size_t)n_bytes, a->stream);
    if (e == cudaErrorMemoryAllocation) {
        /* The pool keeps what it freed (release threshold "never"), in
         * blocks that may not fit this request: hand them back to the
         * driver once the stream is idle, and try again. */
        (void)cudaGetLastError();
        (void)cudaStreamSynchronize(a->stream);
        (void)cudaMemPoolTrimTo(a->pool, 0);
        e = cudaMallocAsync(&p, (size_t)n_bytes, a->stream);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return px_error_set(err, e == cudaErrorMemoryAllocation ? PX_ERR_NOMEM : PX_ERR_CUDA,
                            "px_cuda_alloc.c", __LINE__, 0,
                            "cudaMallocAsync of %lld bytes failed with %lld bytes in use "
                            "(peak %lld): %s",
                            (long long)n_bytes, (long long)a->current_bytes,
                            (long long)a->peak_bytes, cudaGetErrorString(e));
    }
    table_put(a->slots, a->cap, (uintptr_t)p, n_bytes);
    a->count++;
    a->current_bytes += n_bytes;
    if (a->current_bytes > a->peak_bytes)
        a->peak_bytes = a->current_bytes;
    *out = p;
    return PX_OK;
}

px_status px_cuda_free(px_cuda_alloc *a, void *ptr, px_error *err)
{
    if (!ptr)
        return PX_OK;
    uintptr_t p = (uintptr_t)ptr;
    int64_t i = hash_slot(p, a->cap);
    while (a->slots[i].ptr && a->slots[i].ptr != p)
        i = (i + 1) & (a->cap - 1);
    if (!a->slots[i].ptr)
        return PX_FAIL(err, PX_ERR_INTERNAL, "device free of %p: not from this allocator", ptr);
    a->current_bytes -= a->slots[i].n_bytes;
    a->count--;
    /* Backward-shift deletion keeps every probe chain unbroken without tombstones. */
    int64_t hole = i;
    for (int64_t j = (i + 1) & (a->cap - 1); a->slots[j].ptr; j = (j + 1) & (a->cap - 1)) {
        int64_t home = hash_slot(a->slots[j].ptr, a->cap);
        /* Move j into the hole when its home is not cyclically within (hole, j]. */
        int64_t dist_home = (j - home) & (a->cap - 1);
        int64_t dist_hole = (j - hole) & (a->cap - 1);
        if (dist_home >= dist_hole) {
            a->slots[hole] = a->slots[j];
            hole = j;
        }
    }
    a->slots[hole].ptr = 0;
    a->slots[hole].n_bytes = 0;
    PX_CUDA_TRY(err, cudaFreeAsync(ptr, a->stream));
    return PX_OK;
}

int64_t px_cuda_alloc_current_bytes(const px_cuda_alloc *a) { return a->current_bytes; }
int64_t px_cuda_alloc_peak_bytes(const px_cuda_alloc *a) { return a->peak_bytes; }

int64_t px_cuda_alloc_pool_peak_bytes(const px_cuda_alloc *a)
{
    uint64_t high = 0;
    if (cudaMemPoolGetAttribute(a->pool, cudaMemPoolAttrReservedMemHigh, &high) != cudaSuccess) {
        (void)cudaGetLastError();
        return a->peak_bytes;
    }
    return (int64_t)high;
}

void px_cuda_alloc_reset_peak(px_cuda_alloc *a)
{
    a->peak_bytes = a->current_bytes;
    uint64_t zero = 0;
    if (cudaMemPoolSetAttribute(a->pool, cudaMemPoolAttrReservedMemHigh, &zero) != cudaSuccess)
        (void)cudaGetLastError();
}
