/* px_export_formats.c — what every export format shares: the facts of a
 * plan the writers print, and what a format cannot express although the
 * framework runs it in general (px_export_format_check). */
#include "px_export_formats.h"
#include "px_export_finetune.h"

#include <ctype.h>
#include <string.h>

#include "px_plan_check.h"

void px_export_facts_of(const px_plan *plan, plan_facts *f)
{
    const px_parallel *p = &plan->par;
    memset(f, 0, sizeof *f);
    f->seq = px_plan_seq_len(&plan->model, p);
    f->gbatch = px_parallel_global_batch(p);
    f->gpus = px_parallel_gpus(p);
    int gpn = plan->hw.gpus_per_node > 0 ? plan->hw.gpus_per_node : 1;
    f->nodes = (f->gpus + gpn - 1) / gpn;
    f->per_node = f->gpus < gpn ? f->gpus : f->gpus % gpn == 0 ? gpn : 0;
    f->layers_per_chunk = plan->model.n_layers / (p->pp * p->vpp);
    for (int i = 1; i < p->n_chunks; i++)
        f->uneven = f->uneven || p->layers_per_chunk[i] != p->layers_per_chunk[0];
    if (f->uneven) {
        f->first_layers = p->layers_per_chunk[0];
        f->last_layers = p->layers_per_chunk[p->n_chunks - 1];
    }
    f->recompute = p->n_layer_recompute > 0 ? (px_recompute)p->layer_recompute[0] : p->recompute;
    if (f->recompute >= PX_RECOMPUTE_COUNT)
        f->recompute = PX_RECOMPUTE_NONE;
    f->bf16 = plan->hw.dtype_bytes == 2;
}

/* A name safe inside comments, YAML and shell words: [A-Za-z0-9._-]. */
void px_export_safe_name(const char *s, char *out, size_t n)
{
    size_t i = 0;
    for (; s[i] && i + 1 < n; i++)
        out[i] = isalnum((unsigned char)s[i]) || strchr("._-", s[i]) ? s[i] : '_';
    out[i] = '\0';
}

/* Megatron names a split by its first and last stage when the middle
 * stages hold equal counts (vpp 1); any other split is a layout string. */
bool px_export_first_last_split(const px_parallel *p)
{
    if (p->vpp > 1)
        return false;
    for (int i = 2; i < p->n_chunks - 1; i++)
        if (p->layers_per_chunk[i] != p->layers_per_chunk[1])
            return false;
    return true;
}

bool px_export_recompute_mixed(const px_parallel *p)
{
    for (int i = 1; i < p->n_layer_recompute; i++)
        if (p->layer_recompute[i] != p->layer_recompute[0])
            return true;
    return false;
}

/* Megatron's per-layer recompute (--recompute-method block
 * --recompute-num-layers N): full recompute of the first N layers of every
 * pipeline chunk, none for the rest.  Returns N, or -1 when the plan's
 * choices are not of that form. */
int px_export_block_recompute_layers(const px_plan *plan)
{
    const px_parallel *p = &plan->par;
    int chunks = p->pp * p->vpp, first = 0, n = -1;
    for (int c = 0; c < chunks; c++) {
        int len = p->n_chunks > 0 ? p->layers_per_chunk[c]
                                  : (int)(plan->model.n_layers / chunks);
        int k = 0;
        while (k < len && first + k < p->n_layer_recompute &&
               p->layer_recompute[first + k] == PX_RECOMPUTE_FULL)
            k++;
        for (int i = k; i < len; i++)
            if (first + i >= p->n_layer_recompute ||
                p->layer_recompute[first + i] != PX_RECOMPUTE_NONE)
                return -1;
        if (n >= 0 && k != n)
            return -1;
        n = k;
        first += len;
    }
    return n;
}

static px_status format_refuse(px_error *err, px_export_target t, const char *what)
{
    return PX_FAIL(err, PX_ERR_UNSUPPORTED, "%s cannot run this plan as exported: %s",
                   px_export_target_name(t), what);
}

px_status px_export_format_check(const px_plan *plan, px_export_target t, px_error *err)
{
    const px_parallel *p = &plan->par;
    plan_facts f;
    px_export_facts_of(plan, &f);
    px_status st = px_export_finetune_check(plan, t, err);
    if (st != PX_OK)
        return st;
    switch (t) {
    case PX_EXPORT_MEGATRON:
    case PX_EXPORT_NEMO:
        if (px_export_recompute_mixed(p) && px_export_block_recompute_layers(plan) < 0)
            return format_refuse(err, t, "a recompute choice per layer other than full "
                                         "recompute of the first N layers of every stage "
                                         "(--recompute-method block); plan with "
                                         "--partition uniform");
        return PX_OK;
    default:
        return PX_OK;
    }
}
