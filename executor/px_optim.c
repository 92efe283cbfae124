/* px_optim.c — AdamW as Megatron-LM and the Hugging Face Trainer configure
 * it: weight decay on the matrices only.  Megatron's default
 * no_weight_decay_cond (megatron/core/optimizer/__init__.py,
 * _get_param_groups: a parameter that is 1-D or named *.bias gets wd_mult
 * 0) and the Trainer's get_decay_parameter_names (every parameter but the
 * LayerNorm / RMSNorm weights and the biases) leave the norms and biases
 * undecayed; in the parameter table those are the tensors of one column
 * (px_param_seg.full_cols == 1).  `execute --weight-decay-all` decays them
 * too (opt.vector_wd_mult 1).
 *
 * Every optimizer call covers a contiguous range of the table (the whole
 * table, a ZeRO-1 shard, a ZeRO-2/3 unit piece), so the update splits that
 * range into runs of one decay each: no per-element mask in memory.  Calls
 * name the range by its offset in the optimizer state (the moments' layout),
 * so that one place here splits it between host and device under optimizer
 * offload. */
#include <stdlib.h>
#include <string.h>

#include "px_bf16.h"
#include "px_exec_internal.h"
#include "px_kernels_cpu.h"

static int cmp_range(const void *a, const void *b)
{
    int64_t x = ((const int64_t *)a)[0], y = ((const int64_t *)b)[0];
    return x < y ? -1 : x > y;
}

px_status px_ex_decay_build(px_exec *ex, px_error *err)
{
    const px_param_table *t = &ex->tab;
    free(ex->no_decay);
    ex->no_decay = NULL;
    ex->n_no_decay = 0;
    if (t->n_segs == 0)
        return PX_OK;
    ex->no_decay = malloc((size_t)t->n_segs * 2 * sizeof *ex->no_decay);
    if (!ex->no_decay)
        return PX_FAIL(err, PX_ERR_NOMEM, "optimizer: out of memory (decay ranges)");
    int n = 0;
    for (int i = 0; i < t->n_segs; i++) {
        const px_param_seg *s = &t->segs[i];
        if (s->full_cols != 1 || s->n_rows * s->n_cols == 0)
            continue;
        ex->no_decay[2 * n] = s->offset;
        ex->no_decay[2 * n + 1] = s->offset + s->n_rows * s->n_cols;
        n++;
    }
    qsort(ex->no_decay, (size_t)n, 2 * sizeof *ex->no_decay, cmp_range);
    ex->n_no_decay = n;
    return PX_OK;
}

/* From table offset pos: whether it decays and where that run ends. */
static int64_t decay_run(const px_exec *ex, int64_t pos, bool *decays)
{
    for (int i = 0; i < ex->n_no_decay; i++) {
        int64_t lo = ex->no_decay[2 * i], hi = ex->no_decay[2 * i + 1];
        if (hi <= pos)
            continue;
        *decays = lo > pos;
        return *decays ? lo : hi;
    }
    *decays = true;
    return INT64_MAX;
}

/* A kernel with px_kernels.adamw_step's arguments. */
typedef void (*px_adamw_fn)(float *master, const float *grad, float *m, float *v, int64_t n,
                            float lr, float b1, float b2, float eps, float wd, int64_t step,
                            void *copy);

/* One range (master, grad, m, v and copy at the range) in runs of one weight
 * decay each. */
static void adamw_runs(const px_exec *ex, px_adamw_fn step, float *master, const float *grad,
                       float *m, float *v, int64_t n, int64_t table_off, void *copy)
{
    const px_exec_options *o = &ex->opt;
    for (int64_t i = 0; i < n;) {
        bool decays;
        int64_t end = decay_run(ex, table_off + i, &decays), len = end - (table_off + i);
        if (len > n - i)
            len = n - i;
        float wd = decays ? o->weight_decay : o->weight_decay * o->vector_wd_mult;
        step(master + i, grad + i, m + i, v + i, len, o->lr, o->beta1, o->beta2, o->adam_eps, wd,
             ex->adam_steps, copy ? px_ex_at(ex, copy, i) : NULL);
        i += len;
    }
}

static void host_adamw_f32(float *p, const float *g, float *m, float *v, int64_t n, float lr,
                           float b1, float b2, float eps, float wd, int64_t step, void *copy)
{
    px_cpu_adamw_step(p, g, m, v, n, lr, b1, b2, eps, wd, step);
    if (copy && copy != p)
        memcpy(copy, p, (size_t)n * sizeof *p);
}

static void host_adamw_bf16(float *p, const float *g, float *m, float *v, int64_t n, float lr,
                            float b1, float b2, float eps, float wd, int64_t step, void *copy)
{
    px_cpu_adamw_step(p, g, m, v, n, lr, b1, b2, eps, wd, step);
    if (copy)
        px_bf16_round(copy, p, n);
}

/* A host range, on the host thread: the host kernel (px_cpu_adamw_step), the
 * same arithmetic per element as the CPU backend's, writing the compute copy
 * (the host-to-device copy of a GPU framework). */
static void host_job_run(const px_exec *ex, const px_host_job *j)
{
    px_adamw_fn step = ex->act_dtype == PX_F32 ? host_adamw_f32 : host_adamw_bf16;
    adamw_runs(ex, step, j->master, j->grad, j->m, j->v, j->n, j->table_off, j->copy);
}

/* The state's first n_host elements are on the host (px_offload.c): their
 * part of the range goes to the host thread, the rest runs here on the
 * device arrays, which start at state offset n_host. */
void px_ex_adamw(px_exec *ex, int64_t so, const float *grad, int64_t n, int64_t table_off,
                 void *w)
{
    bool mixed = ex->master != NULL;
    int64_t h = so < ex->n_host ? ex->n_host - so : 0;
    if (h > n)
        h = n;
    if (h > 0) {
        px_host_job j = {host_job_run, mixed ? ex->host_master + so : (float *)w, grad,
                         ex->host_m + so, ex->host_v + so, h, table_off, mixed ? w : NULL};
        px_host_step_push(ex, &j);
    }
    if (h == n)
        return;
    int64_t d = so + h - ex->n_host; /* index in the device arrays */
    void *wd = px_ex_at(ex, w, h);
    adamw_runs(ex, ex->k->adamw_step, mixed ? ex->master + d : (float *)wd, grad + h,
               ex->adam_m + d, ex->adam_v + d, n - h, table_off + h, mixed ? wd : NULL);
}
