/* px_export.c — what each export target runs, and the refusal of plans a
 * target cannot run.  The file formats are in px_export_formats.c, the
 * targets' names in px_export_target.c. */
#include "px_export.h"

#include <stdio.h>
#include <string.h>

#include "px_export_formats.h"
#include "px_framework.h"

/* ---- what each target runs ------------------------------------------------
 * The framework profiles (frameworks/<name>.json, px_framework) say what a
 * framework runs; NeMo / Megatron-Bridge run Megatron-Core, and the slurm
 * script runs Parallax's own executor. */
static const char *const target_framework[PX_EXPORT_COUNT] = {"megatron", "megatron",
                                                              "torchtitan", "deepspeed",
                                                              "parallax"};

px_status px_export_target_caps(px_export_target t, px_caps *out, px_error *err)
{
    if (t < 0 || t >= PX_EXPORT_COUNT)
        return PX_FAIL(err, PX_ERR_INVALID, "export target %d out of range", (int)t);
    px_framework fw; /* about 1 KB */
    px_status st = px_framework_load(target_framework[t], NULL, &fw, err);
    if (st == PX_OK)
        *out = fw.caps;
    return st;
}

/* ---- the refusal ------------------------------------------------------- */

static const char *feature_name(unsigned bit)
{
    switch (bit) {
    case PX_FEAT_MLA: return "multi-head latent attention";
    case PX_FEAT_QK_NORM: return "q/k normalisation";
    case PX_FEAT_SHARED_EXPERTS: return "shared experts";
    case PX_FEAT_DENSE_FIRST: return "leading dense layers in an MoE model";
    case PX_FEAT_MTP: return "multi-token prediction";
    case PX_FEAT_MOE: return "mixture of experts";
    case PX_FEAT_GPT_BLOCK: return "the GPT block (LayerNorm, GeLU, learned positions)";
    case PX_FEAT_MAMBA: return "Mamba-2 layers (a hybrid layer pattern)";
    default: return "the Llama block (RMSNorm, SwiGLU, RoPE)";
    }
}

/* The schedules caps runs, "1f1b, interleaved". */
static void schedule_list(const px_caps *c, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int s = 0; s < PX_SCHED_COUNT; s++)
        if (c->schedules[s] && len < n)
            len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "",
                                    px_schedule_name((px_schedule)s));
}

/* The capability px_plan_check_cap names (a px_caps field), in words, with
 * the plan's value; else px_plan_check's message msg. */
static void describe(const char *cap, const char *msg, const px_plan *plan, const px_caps *c,
                     char *why, size_t n)
{
    const px_parallel *p = &plan->par;
    char list[128];
    if (!strcmp(cap, "model_features")) {
        unsigned missing = px_model_features(&plan->model) & ~c->model_features;
        unsigned bit = missing & (~missing + 1u); /* the lowest one */
        snprintf(why, n, "%s", feature_name(bit));
    } else if (!strcmp(cap, "max_zero_with_pp")) {
        snprintf(why, n, "ZeRO stage %d with pipeline parallelism (it runs up to stage %d with "
                         "a pipeline)", p->zero, c->max_zero_with_pp);
    } else if (!strcmp(cap, "ddp_1d_only")) {
        snprintf(why, n, "ZeRO-0 (DDP) beside tensor, pipeline, context or expert parallelism "
                         "(it runs DDP only as the one parallel dimension); plan with --zero 2 "
                         "or 3");
    } else if (!strcmp(cap, "tp_with_pp")) {
        snprintf(why, n, "tensor parallelism (%d) with pipeline parallelism (%d) (it runs one "
                         "or the other)", p->tp, p->pp);
    } else if (!strcmp(cap, "schedules")) {
        schedule_list(c, list, sizeof list);
        snprintf(why, n, "pipeline schedule %s (it runs %s)", px_schedule_name(p->schedule),
                 list);
    } else if (!strcmp(cap, "max_pp")) {
        snprintf(why, n, "pipeline parallelism of %d stages (at most %d)", p->pp, c->max_pp);
    } else if (!strcmp(cap, "per_layer_recompute")) {
        snprintf(why, n, "a recompute choice per layer%s; plan with --partition uniform",
                 c->block_recompute ? " other than full recompute of the first N layers of "
                                      "every pipeline chunk (--recompute-method block)"
                                    : "");
    } else if (!strcmp(cap, "recompute")) {
        snprintf(why, n, "recompute %s", px_recompute_name(p->recompute));
    } else if (!strcmp(cap, "zero")) {
        snprintf(why, n, "ZeRO stage %d", p->zero);
    } else if (!strcmp(cap, "sp")) {
        snprintf(why, n, "sequence parallelism with tensor parallelism (plan with --sp off)");
    } else if (!strcmp(cap, "tp_without_sp")) {
        snprintf(why, n, "tensor parallelism without sequence parallelism (plan with --sp on)");
    } else if (!strcmp(cap, "cp_flavours")) {
        snprintf(why, n, "context parallelism");
    } else if (!strcmp(cap, "ep")) {
        snprintf(why, n, "expert parallelism");
    } else if (!strcmp(cap, "etp")) {
        snprintf(why, n, "expert tensor parallelism %d different from TP %d", p->etp, p->tp);
    } else if (!strcmp(cap, "needs_flash_attention")) {
        snprintf(why, n, "attention that stores the s x s scores");
    } else if (!strcmp(cap, "uneven_virtual_chunks")) {
        snprintf(why, n, "interleaved chunks of unequal size; plan with --partition uniform");
    } else if (!strcmp(cap, "empty_end_chunks")) {
        snprintf(why, n, "a pipeline chunk holding only the embedding or the loss");
    } else if (!strcmp(cap, "uneven_stages")) {
        snprintf(why, n, "an uneven pipeline split; plan with --partition uniform");
    } else if (!strcmp(cap, "tp_comm_overlap")) {
        snprintf(why, n, "the forward's TP collectives under their GEMMs (plan with "
                         "--tp-comm-overlap off)");
    } else if (!strcmp(cap, "grad_bf16")) {
        snprintf(why, n, "bf16 gradients (plan with --grad-dtype fp32)");
    } else {
        snprintf(why, n, "%.400s", msg); /* px_plan_check's own words */
    }
}

px_status px_export_check(const px_plan *plan, px_export_target t, px_error *err)
{
    px_caps caps;
    px_status st = px_export_target_caps(t, &caps, err);
    if (st != PX_OK)
        return st;
    const char *cap = NULL;
    px_error e;
    if (px_plan_check_cap(&plan->model, &plan->par, &caps, &cap, &e) != PX_OK) {
        char why[512];
        describe(cap ? cap : "", e.msg, plan, &caps, why, sizeof why);
        return PX_FAIL(err, PX_ERR_UNSUPPORTED, "%s cannot run this plan: %s (frameworks/%s.json)",
                       px_export_target_name(t), why, target_framework[t]);
    }
    if ((st = px_export_format_check(plan, t, err)) != PX_OK) /* what a format cannot say */
        return st;
    /* the limits of the framework version a writer targets */
    char why[512];
    bool refused = t == PX_EXPORT_TORCHTITAN  ? px_export_torchtitan_refusal(plan, why, sizeof why)
                   : t == PX_EXPORT_DEEPSPEED ? px_export_deepspeed_refusal(plan, why, sizeof why)
                                              : false;
    return refused ? PX_FAIL(err, PX_ERR_UNSUPPORTED, "%s cannot run this plan as exported: %s",
                             px_export_target_name(t), why)
                   : PX_OK;
}

px_status px_export_render(const px_plan *plan, px_export_target t, const px_export_opts *o,
                           px_buf *out, px_error *err)
{
    px_status st = px_export_check(plan, t, err);
    if (st != PX_OK)
        return st;
    switch (t) {
    case PX_EXPORT_MEGATRON: return px_export_megatron(plan, o, out, err);
    case PX_EXPORT_NEMO: return px_export_nemo(plan, out, err);
    case PX_EXPORT_TORCHTITAN: return px_export_torchtitan(plan, out, err);
    case PX_EXPORT_DEEPSPEED: return px_export_deepspeed(plan, out, err);
    case PX_EXPORT_SLURM: return px_export_slurm(plan, o, out, err);
    default: return PX_FAIL(err, PX_ERR_INVALID, "export target %d out of range", (int)t);
    }
}
