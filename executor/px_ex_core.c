/* px_ex_core.c — the engine's services to the layers (px_ex_core.h):
 * device allocations through the memory tracker, the global positions of a
 * rank's sequence rows under context parallelism, and the TP collectives at
 * a sub-block's borders.  Below the layer files (px_layer.c, px_mla.c,
 * px_moe.c, ...) and the engine (px_exec.c), which both call it. */
#include "px_exec_internal.h"

px_status px_ex_alloc(px_exec *ex, px_mem_kind kind, int64_t n, px_dtype t, void **out,
                      px_error *err)
{
    return px_mem_alloc(&ex->mem, kind, n * px_dtype_bytes(t), out, err);
}

px_status px_ex_alloc_f32(px_exec *ex, px_mem_kind kind, int64_t n, float **out,
                          px_error *err)
{
    void *p = NULL;
    PX_TRY(px_ex_alloc(ex, kind, n, PX_F32, &p, err));
    *out = p;
    return PX_OK;
}

px_status px_ex_alloc_i32(px_exec *ex, px_mem_kind kind, int64_t n, int32_t **out,
                          px_error *err)
{
    void *p = NULL;
    PX_TRY(px_mem_alloc(&ex->mem, kind, n * (int64_t)sizeof(int32_t), &p, err));
    *out = p;
    return PX_OK;
}

int64_t px_ex_sequence_index(const px_exec *ex, int64_t step, int64_t micro, int64_t row)
{
    int64_t global_batch = ex->b * ex->m * ex->plan.par.dp;
    return step * global_batch + (ex->dp_rank * ex->m + micro) * ex->b + row;
}

int64_t px_ex_pos(const px_exec *ex, int cp_rank, int64_t p)
{
    int64_t c = ex->cp_chunk, n = 2 * (int64_t)ex->cp.size;
    if (ex->cp.size <= 1)
        return p;
    return p < c ? cp_rank * c + p : (n - 1 - cp_rank) * c + (p - c);
}

void px_ex_pos_runs(const px_exec *ex, int64_t lo, int64_t hi,
                    void (*fn)(px_exec *, int64_t, int64_t, int64_t, void *), void *arg)
{
    /* Rows [0, c) and [c, s_l) are each contiguous in position. */
    int64_t cut = ex->cp.size <= 1 ? hi : ex->cp_chunk;
    if (lo < cut && lo < hi)
        fn((px_exec *)ex, lo, (hi < cut ? hi : cut) - lo, px_ex_pos(ex, ex->cp_rank, lo), arg);
    int64_t b = lo > cut ? lo : cut;
    if (b < hi)
        fn((px_exec *)ex, b, hi - b, px_ex_pos(ex, ex->cp_rank, b), arg);
}

px_status px_ex_tp_gather(px_exec *ex, const void *shard, void **full, px_error *err)
{
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, ex->T * ex->h, full, err));
    return ex->be->all_gather(ex->be, *full, shard, ex->Ts * ex->h, ex->act_dtype, &ex->tp, err);
}

px_status px_ex_tp_reduce(px_exec *ex, void *partial, void **out, px_mem_kind kind,
                          px_error *err)
{
    if (!ex->sp) {
        *out = partial;
        return ex->be->all_reduce(ex->be, partial, ex->T * ex->h, ex->act_dtype, PX_REDUCE_SUM,
                                  &ex->tp, err);
    }
    PX_TRY(px_ex_alloc_act(ex, kind, ex->Ts * ex->h, out, err));
    px_status st = ex->be->reduce_scatter(ex->be, *out, partial, ex->Ts * ex->h, ex->act_dtype,
                                          &ex->tp, err);
    px_ex_free(ex, &partial);
    return st;
}
