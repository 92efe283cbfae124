/* px_export.c — export targets, what each runs, and the refusal of plans
 * a target cannot run.  The file formats are in px_export_formats.c. */
#include "px_export.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "px_export_formats.h"

static const char *const target_names[PX_EXPORT_COUNT] = {"megatron", "nemo", "torchtitan",
                                                          "deepspeed", "slurm"};

const char *px_export_target_name(px_export_target t)
{
    return t >= 0 && t < PX_EXPORT_COUNT ? target_names[t] : "?";
}

px_status px_export_target_parse(const char *s, px_export_target *out, px_error *err)
{
    for (int t = 0; t < PX_EXPORT_COUNT; t++)
        if (!strcasecmp(s, target_names[t])) {
            *out = (px_export_target)t;
            return PX_OK;
        }
    static const char *const no_exporter[] = {"llm-foundry", "maxtext", "parallax"};
    for (size_t i = 0; i < sizeof no_exporter / sizeof no_exporter[0]; i++)
        if (!strcasecmp(s, no_exporter[i]))
            return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                           "--to %s: %s has no exporter; allowed targets are megatron, nemo, "
                           "torchtitan, deepspeed and slurm (Parallax's own executor)",
                           s, no_exporter[i]);
    return PX_FAIL(err, PX_ERR_INVALID,
                   "--to \"%s\": allowed targets are megatron, nemo, torchtitan, deepspeed, slurm",
                   s);
}

/* ---- what each target runs ------------------------------------------------
 * FALLBACK CAPABILITIES: these stand in for the framework profiles
 * (frameworks/<name>.json, read by px_framework) until those are in this
 * tree; px_export_target_caps is the one place to switch over.  The reasons
 * for each value are in docs/export.md, "What each target runs". */
static void caps_all(px_caps *c, const char *name)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    for (int i = 0; i < PX_SCHED_COUNT; i++)
        c->schedules[i] = true;
    for (int i = 0; i < PX_RECOMPUTE_COUNT; i++)
        c->recompute[i] = true;
    for (int i = 0; i < 4; i++)
        c->zero[i] = true;
    c->per_layer_recompute = c->uneven_stages = c->uneven_virtual_chunks = true;
    c->hybrid_shard = c->sp = c->tp_without_sp = c->ep = c->etp = c->grad_bf16 = true;
    c->cp_flavours = PX_CP_RING_P2P | PX_CP_ALL_GATHER | PX_CP_ALL_TO_ALL;
    c->pads_vocab = true;
    c->vocab_pad_multiple = 128;
    c->precisions = PX_PREC_ALL;
    c->model_features = ~0u;
}

static void caps_fallback(px_export_target t, px_caps *c)
{
    caps_all(c, px_export_target_name(t));
    switch (t) {
    case PX_EXPORT_MEGATRON:
    case PX_EXPORT_NEMO: /* Megatron-Core under both */
        c->schedules[PX_SCHED_GPIPE] = false;
        c->schedules[PX_SCHED_ZB_H1] = c->schedules[PX_SCHED_ZB_H2] = false;
        c->per_layer_recompute = false;
        c->uneven_virtual_chunks = false;
        break;
    case PX_EXPORT_TORCHTITAN:
        c->schedules[PX_SCHED_ZB_H2] = false;
        c->per_layer_recompute = false;
        c->uneven_stages = c->uneven_virtual_chunks = false;
        c->zero[1] = false; /* FSDP2 shards parameters too; ZeRO-2 = no reshard */
        c->tp_without_sp = false;
        c->cp_flavours = PX_CP_ALL_GATHER | PX_CP_ALL_TO_ALL;
        c->pads_vocab = false;
        c->model_features &= ~(unsigned)(PX_FEAT_GPT_BLOCK | PX_FEAT_MTP);
        break;
    case PX_EXPORT_DEEPSPEED:
        for (int i = 0; i < PX_SCHED_COUNT; i++)
            c->schedules[i] = i == PX_SCHED_1F1B;
        c->per_layer_recompute = false;
        c->uneven_stages = c->uneven_virtual_chunks = false;
        c->sp = false;
        c->ep = c->etp = false;
        c->cp_flavours = 0;
        c->pads_vocab = false;
        c->model_features &= ~(unsigned)(PX_FEAT_MLA | PX_FEAT_MTP | PX_FEAT_MOE |
                                          PX_FEAT_SHARED_EXPERTS | PX_FEAT_DENSE_FIRST);
        break;
    default: /* slurm: Parallax's executor runs every plan the planner writes */
        break;
    }
}

px_status px_export_target_caps(px_export_target t, px_caps *out, px_error *err)
{
    if (t < 0 || t >= PX_EXPORT_COUNT)
        return PX_FAIL(err, PX_ERR_INVALID, "export target %d out of range", (int)t);
    caps_fallback(t, out);
    return PX_OK;
}

/* ---- the refusal ------------------------------------------------------- */

static unsigned model_features(const px_model *m)
{
    unsigned f = m->block == PX_BLOCK_GPT ? PX_FEAT_GPT_BLOCK : PX_FEAT_LLAMA_BLOCK;
    if (m->attn == PX_ATTN_MLA)
        f |= PX_FEAT_MLA;
    if (m->qk_norm)
        f |= PX_FEAT_QK_NORM;
    if (m->n_experts > 0)
        f |= PX_FEAT_MOE;
    if (m->n_shared_experts > 0)
        f |= PX_FEAT_SHARED_EXPERTS;
    if (m->n_experts > 0 && m->first_dense_layers > 0)
        f |= PX_FEAT_DENSE_FIRST;
    if (m->n_mtp_modules > 0)
        f |= PX_FEAT_MTP;
    return f;
}

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

static bool per_layer_mixed(const px_parallel *p)
{
    for (int i = 1; i < p->n_layer_recompute; i++)
        if (p->layer_recompute[i] != p->layer_recompute[0])
            return true;
    return false;
}

static bool split_uneven(const px_parallel *p)
{
    for (int i = 1; i < p->n_chunks; i++)
        if (p->layers_per_chunk[i] != p->layers_per_chunk[0])
            return true;
    return false;
}

static px_status refuse(px_error *err, const char *target, const char *what)
{
    return PX_FAIL(err, PX_ERR_UNSUPPORTED, "%s cannot run this plan: %s", target, what);
}

/* The parallel layout against the capabilities (one feature at a time, in
 * the order a user would change them). */
static px_status check_layout(const px_plan *plan, const px_caps *c, px_error *err)
{
    const px_parallel *p = &plan->par;
    char why[256], list[128];
    if (p->pp > 1 && !c->schedules[p->schedule]) {
        schedule_list(c, list, sizeof list);
        snprintf(why, sizeof why, "pipeline schedule %s (it runs %s)",
                 px_schedule_name(p->schedule), list);
        return refuse(err, c->name, why);
    }
    if (per_layer_mixed(p) && !c->per_layer_recompute)
        return refuse(err, c->name, "a recompute choice per layer (the stage partition "
                                    "program's); plan with --partition uniform");
    px_recompute r = p->n_layer_recompute > 0 ? (px_recompute)p->layer_recompute[0] : p->recompute;
    if (r < PX_RECOMPUTE_COUNT && !c->recompute[r]) {
        snprintf(why, sizeof why, "recompute %s", px_recompute_name(r));
        return refuse(err, c->name, why);
    }
    if (split_uneven(p) && p->vpp == 1 && !c->uneven_stages)
        return refuse(err, c->name, "an uneven pipeline split (layers per stage differ); "
                                    "plan with --partition uniform");
    if (split_uneven(p) && p->vpp > 1 && !c->uneven_virtual_chunks)
        return refuse(err, c->name, "interleaved chunks of unequal size; plan with "
                                    "--partition uniform");
    if (p->zero < 0 || p->zero > 3 || !c->zero[p->zero]) {
        snprintf(why, sizeof why, "ZeRO stage %d", p->zero);
        return refuse(err, c->name, why);
    }
    if (p->tp > 1 && p->sp && !c->sp)
        return refuse(err, c->name, "sequence parallelism with tensor parallelism (--sp off)");
    if (p->tp > 1 && !p->sp && !c->tp_without_sp)
        return refuse(err, c->name, "tensor parallelism without sequence parallelism (--sp on)");
    if (p->ep > 1 && !c->ep)
        return refuse(err, c->name, "expert parallelism");
    if (p->etp > 1 && p->etp != p->tp && !c->etp)
        return refuse(err, c->name, "expert tensor parallelism different from TP");
    if (p->cp > 1 && c->cp_flavours == 0)
        return refuse(err, c->name, "context parallelism");
    if (!p->grad_fp32 && !c->grad_bf16)
        return refuse(err, c->name, "bf16 gradients (--grad-dtype fp32)");
    if (!p->flash_attention && c->needs_flash_attention)
        return refuse(err, c->name, "attention that stores the s x s scores");
    if (!c->pads_vocab && plan->model.vocab % p->tp != 0) {
        snprintf(why, sizeof why, "a vocabulary of %lld that TP %d does not divide (no padding)",
                 (long long)plan->model.vocab, p->tp);
        return refuse(err, c->name, why);
    }
    unsigned missing = model_features(&plan->model) & ~c->model_features;
    for (unsigned bit = 1; missing && bit; bit <<= 1)
        if (missing & bit)
            return refuse(err, c->name, feature_name(bit));
    return PX_OK;
}

px_status px_export_check(const px_plan *plan, px_export_target t, px_error *err)
{
    px_caps caps;
    px_status st = px_export_target_caps(t, &caps, err);
    if (st != PX_OK)
        return st;
    st = check_layout(plan, &caps, err);
    if (st != PX_OK)
        return st;
    return px_export_format_check(plan, t, err); /* what the file format cannot say */
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
