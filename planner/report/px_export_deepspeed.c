/* px_export_deepspeed.c — a plan as a DeepSpeed config (JSON,
 * docs/export.md). */
#include "px_export_formats.h"

#include <jansson.h>
#include <string.h>

px_status px_export_deepspeed(const px_plan *plan, px_buf *b, px_error *err)
{
    const px_parallel *p = &plan->par;
    plan_facts f;
    px_export_facts_of(plan, &f);
    json_t *root = json_pack(
        "{s:I, s:I, s:I, s:{s:i, s:b, s:b, s:b}, s:{s:b}, s:s, s:{s:i, s:s, s:i}, s:f, s:i, "
        "s:b}",
        "train_batch_size", (json_int_t)f.gbatch, "train_micro_batch_size_per_gpu",
        (json_int_t)p->micro_batch, "gradient_accumulation_steps", (json_int_t)p->n_micro,
        "zero_optimization", "stage", p->zero, "overlap_comm", p->dp_overlap,
        "contiguous_gradients", 1, "reduce_scatter", 1, "bf16", "enabled", f.bf16,
        "communication_data_type", p->grad_fp32 ? "fp32" : "bf16", "pipeline", "stages",
        p->pp, "partition", "uniform", "activation_checkpoint_interval",
        f.recompute == PX_RECOMPUTE_FULL ? 1 : 0, "gradient_clipping", 1.0, "steps_per_print",
        10, "wall_clock_breakdown", 0);
    if (!root)
        return PX_FAIL(err, PX_ERR_NOMEM, "deepspeed export: building the JSON failed");
    if (p->tp > 1)
        json_object_set_new(root, "tensor_parallel",
                            json_pack("{s:i}", "autotp_size", p->tp));
    if (p->cp > 1) /* Ulysses: heads <-> sequence all-to-all */
        json_object_set_new(root, "sequence_parallel_size", json_integer(p->cp));
    char *s = json_dumps(root, JSON_SORT_KEYS | JSON_INDENT(2));
    json_decref(root);
    if (!s)
        return PX_FAIL(err, PX_ERR_NOMEM, "deepspeed export: writing the JSON failed");
    px_buf_puts(b, s);
    px_buf_puts(b, "\n");
    free(s);
    return PX_OK;
}
