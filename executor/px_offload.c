/* px_offload.c — optimizer offload: where each element of this rank's
 * optimizer state lives.
 *
 * Megatron-Core's HybridDeviceOptimizer (--optimizer-cpu-offload with
 * --optimizer-offload-fraction F) walks the optimizer's parameters in order
 * and moves them to the CPU while the count moved is below F of the total:
 * the leading share, in parameter order.  The executor's state is this
 * rank's optimizer elements in table order (the whole table, its ZeRO-1
 * shard then its experts, or its ZeRO-2/3 pieces unit by unit), so the host
 * holds the first ceil(F n) of them.  The cut falls at an element, where
 * Megatron's falls at the end of the parameter that crosses F: the host
 * share is then F of the state exactly, as the cost model prices it
 * (docs/cost-model.md, "Offload").  DeepSpeed offloads everything (F = 1).
 *
 * The host share's master (bf16 storage; in fp32 the weights are the
 * master and stay in the compute copy) and moments are host allocations of
 * the memory tracker, outside the device totals; the device arrays
 * (ex->master, adam_m, adam_v) hold the rest. */
#include <math.h>
#include <string.h>

#include "px_exec_internal.h"

static float *host_part(px_exec *ex, px_state_part part)
{
    return part == PX_STATE_MASTER ? ex->host_master : part == PX_STATE_M ? ex->host_m : ex->host_v;
}

static float *device_part(px_exec *ex, px_state_part part)
{
    return part == PX_STATE_MASTER ? ex->master : part == PX_STATE_M ? ex->adam_m : ex->adam_v;
}

px_status px_ex_offload_setup(px_exec *ex, int64_t n_moments, int64_t *n_device, px_error *err)
{
    const px_offload *o = &ex->plan.par.offload;
    ex->n_host = 0;
    *n_device = n_moments;
    if (o->kind != PX_OFFLOAD_OPTIMIZER)
        return PX_OK;
    int64_t nh = (int64_t)ceil(o->fraction * (double)n_moments);
    ex->n_host = nh < n_moments ? nh : n_moments;
    *n_device = n_moments - ex->n_host;
    int64_t bytes = ex->n_host * (int64_t)sizeof(float);
    void *p = NULL;
    if (ex->act_dtype != PX_F32) {
        PX_TRY(px_mem_alloc_host(&ex->mem, bytes, &p, err));
        ex->host_master = p;
    }
    PX_TRY(px_mem_alloc_host(&ex->mem, bytes, &p, err));
    ex->host_m = p;
    PX_TRY(px_mem_alloc_host(&ex->mem, bytes, &p, err));
    ex->host_v = p;
    /* At most one host range per optimizer call: one per ZeRO-2/3 unit, two
     * below (the dense shard and the experts). */
    return px_host_step_create(ex, ex->n_units + 2, err);
}

/* Byte addressing: a checkpoint buffer need not align its floats. */
void px_ex_state_put(px_exec *ex, px_state_part part, const void *src)
{
    size_t h = (size_t)ex->n_host * sizeof(float);
    if (h > 0)
        memcpy(host_part(ex, part), src, h);
    ex->be->upload(ex->be, device_part(ex, part), (const unsigned char *)src + h,
                   (ex->n_moments - ex->n_host) * (int64_t)sizeof(float));
}

void px_ex_state_get(px_exec *ex, px_state_part part, void *dst)
{
    size_t h = (size_t)ex->n_host * sizeof(float);
    if (h > 0)
        memcpy(dst, host_part(ex, part), h);
    ex->be->download(ex->be, (unsigned char *)dst + h, device_part(ex, part),
                     (ex->n_moments - ex->n_host) * (int64_t)sizeof(float));
}

px_status px_ex_master_whole(px_exec *ex, float **out, px_error *err)
{
    *out = px_ex_master(ex);
    if (!ex->master || ex->n_host == 0)
        return PX_OK;
    float *whole = NULL;
    PX_TRY(px_ex_alloc_f32(ex, PX_MEM_TEMP, ex->n_moments, &whole, err));
    ex->be->upload(ex->be, whole, ex->host_master, ex->n_host * (int64_t)sizeof(float));
    ex->be->copy(ex->be, whole + ex->n_host, ex->master,
                 (ex->n_moments - ex->n_host) * (int64_t)sizeof(float));
    *out = whole;
    return PX_OK;
}

void px_ex_master_whole_done(px_exec *ex, float **p)
{
    if (*p != px_ex_master(ex))
        px_mem_free(&ex->mem, *p);
    *p = NULL;
}
