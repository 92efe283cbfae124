/* px_memtrack.c — see px_memtrack.h. */
#include "px_memtrack.h"

#include <stdlib.h>
#include <string.h>

static const char *const kind_names[PX_MEM_KINDS] = {"weights",     "grads",   "optimizer",
                                                     "activations", "buffers", "temp"};

const char *px_mem_kind_name(px_mem_kind k)
{
    return (k >= 0 && k < PX_MEM_KINDS) ? kind_names[k] : "?";
}

void px_mem_init(px_memtrack *t, px_backend *be)
{
    memset(t, 0, sizeof *t);
    t->be = be;
}

static px_status grow_live(px_memtrack *t, px_error *err)
{
    if (t->n_live == t->cap_live) {
        int cap = t->cap_live ? 2 * t->cap_live : 256;
        px_mem_block *nb = realloc(t->live, (size_t)cap * sizeof *nb);
        if (!nb)
            return PX_FAIL(err, PX_ERR_NOMEM, "memory tracker: cannot grow its block list");
        t->live = nb;
        t->cap_live = cap;
    }
    return PX_OK;
}

px_status px_mem_alloc(px_memtrack *t, px_mem_kind kind, int64_t bytes, void **out,
                       px_error *err)
{
    *out = NULL;
    PX_TRY(grow_live(t, err));
    px_status st = t->be->alloc(t->be, bytes, out, err);
    if (st)
        return st;
    t->live[t->n_live++] = (px_mem_block){*out, bytes, kind, false};
    t->cur_bytes += bytes;
    t->cur[kind] += bytes;
    if (t->cur_bytes > t->peak_bytes) {
        t->peak_bytes = t->cur_bytes;
        memcpy(t->at_peak, t->cur, sizeof t->cur);
    }
    return PX_OK;
}

px_status px_mem_alloc_host(px_memtrack *t, int64_t bytes, void **out, px_error *err)
{
    *out = NULL;
    PX_TRY(grow_live(t, err));
    *out = calloc(1, bytes > 0 ? (size_t)bytes : 1);
    if (!*out)
        return PX_FAIL(err, PX_ERR_NOMEM, "cannot allocate %lld bytes of host memory",
                       (long long)bytes);
    t->live[t->n_live++] = (px_mem_block){*out, bytes, PX_MEM_TEMP, true};
    t->host_bytes += bytes;
    if (t->host_bytes > t->host_peak_bytes)
        t->host_peak_bytes = t->host_bytes;
    return PX_OK;
}

static void block_free(px_memtrack *t, const px_mem_block *b)
{
    if (b->host)
        free(b->ptr);
    else
        t->be->free(t->be, b->ptr);
}

void px_mem_free(px_memtrack *t, void *p)
{
    if (!p)
        return;
    /* Search from the end: buffers are mostly freed in reverse order. */
    for (int i = t->n_live - 1; i >= 0; i--) {
        if (t->live[i].ptr != p)
            continue;
        if (t->live[i].host) {
            t->host_bytes -= t->live[i].bytes;
        } else {
            t->cur_bytes -= t->live[i].bytes;
            t->cur[t->live[i].kind] -= t->live[i].bytes;
        }
        block_free(t, &t->live[i]);
        t->live[i] = t->live[--t->n_live];
        return;
    }
    /* Not ours: a bookkeeping bug; freeing it would corrupt the heap, so leak. */
}

void px_mem_set_kind(px_memtrack *t, void *p, px_mem_kind kind)
{
    for (int i = t->n_live - 1; i >= 0; i--)
        if (t->live[i].ptr == p && !t->live[i].host) {
            t->cur[t->live[i].kind] -= t->live[i].bytes;
            t->cur[kind] += t->live[i].bytes;
            t->live[i].kind = kind;
            return;
        }
}

void px_mem_reset_peak(px_memtrack *t)
{
    t->peak_bytes = t->cur_bytes;
    memcpy(t->at_peak, t->cur, sizeof t->cur);
    t->host_peak_bytes = t->host_bytes;
}

void px_mem_release_all(px_memtrack *t)
{
    for (int i = 0; i < t->n_live; i++)
        block_free(t, &t->live[i]);
    free(t->live);
    t->live = NULL;
    t->n_live = t->cap_live = 0;
    t->cur_bytes = t->host_bytes = 0;
    memset(t->cur, 0, sizeof t->cur);
}
