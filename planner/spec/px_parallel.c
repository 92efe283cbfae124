/* px_parallel.c — defaults and names of the parallel configuration. */
#include <stdio.h>
#include <string.h>

#include "px_plan.h"

static const char *const schedule_names[PX_SCHED_COUNT] = {"gpipe", "1f1b", "interleaved",
                                                           "zb-h1", "zb-h2"};
static const char *const recompute_names[PX_RECOMPUTE_COUNT] = {"none", "selective", "full"};

const char *px_schedule_name(px_schedule s)
{
    return (s >= 0 && s < PX_SCHED_COUNT) ? schedule_names[s] : "?";
}

px_status px_schedule_parse(const char *s, px_schedule *out, px_error *err)
{
    for (int i = 0; i < PX_SCHED_COUNT; i++)
        if (strcmp(s, schedule_names[i]) == 0) {
            *out = (px_schedule)i;
            return PX_OK;
        }
    return PX_FAIL(err, PX_ERR_INVALID,
                   "schedule \"%s\": allowed values are gpipe, 1f1b, interleaved, zb-h1, zb-h2",
                   s);
}

const char *const px_moe_dispatch_names[PX_MOE_DISPATCH_COUNT] = {"alltoall", "deepep",
                                                                   "hybridep"};

const char *px_moe_dispatch_name(px_moe_dispatch d)
{
    return (d >= 0 && d < PX_MOE_DISPATCH_COUNT) ? px_moe_dispatch_names[d] : "?";
}

px_status px_moe_dispatch_parse(const char *s, px_moe_dispatch *out, px_error *err)
{
    for (int i = 0; s && i < PX_MOE_DISPATCH_COUNT; i++)
        if (strcmp(s, px_moe_dispatch_names[i]) == 0) {
            *out = (px_moe_dispatch)i;
            return PX_OK;
        }
    return PX_FAIL(err, PX_ERR_INVALID,
                   "moe dispatcher \"%s\": allowed values are alltoall, deepep, hybridep",
                   s ? s : "(null)");
}

const char *const px_attn_kernel_names[PX_AK_COUNT] = {"framework", "native", "flash3",
                                                       "flash2",    "flash1", "triton"};

const char *px_attn_kernel_name(px_attn_kernel k)
{
    return (k >= 0 && k < PX_AK_COUNT) ? px_attn_kernel_names[k] : "?";
}

px_status px_attn_kernel_parse(const char *s, px_attn_kernel *out, bool *unfused, px_error *err)
{
    *unfused = s && strcmp(s, "unfused") == 0;
    if (*unfused) {
        *out = PX_AK_FRAMEWORK;
        return PX_OK;
    }
    for (int i = 0; s && i < PX_AK_COUNT; i++)
        if (strcmp(s, px_attn_kernel_names[i]) == 0) {
            *out = (px_attn_kernel)i;
            return PX_OK;
        }
    return PX_FAIL(err, PX_ERR_INVALID,
                   "attention kernel \"%s\": allowed values are framework, native, flash3, "
                   "flash2, flash1, triton, unfused",
                   s ? s : "(null)");
}

const char *const px_cp_comm_names[PX_CPC_COUNT] = {"p2p", "all-gather", "a2a"};

const char *px_cp_comm_name(px_cp_comm c)
{
    return (c >= 0 && c < PX_CPC_COUNT) ? px_cp_comm_names[c] : "?";
}

px_status px_cp_comm_parse(const char *s, px_cp_comm *out, px_error *err)
{
    for (int i = 0; s && i < PX_CPC_COUNT; i++)
        if (strcmp(s, px_cp_comm_names[i]) == 0) {
            *out = (px_cp_comm)i;
            return PX_OK;
        }
    return PX_FAIL(err, PX_ERR_INVALID, "cp-comm \"%s\": allowed values are p2p, all-gather, a2a",
                   s ? s : "(null)");
}

const char *px_recompute_name(px_recompute r)
{
    return (r >= 0 && r < PX_RECOMPUTE_COUNT) ? recompute_names[r] : "?";
}

px_status px_recompute_parse(const char *s, px_recompute *out, px_error *err)
{
    for (int i = 0; i < PX_RECOMPUTE_COUNT; i++)
        if (strcmp(s, recompute_names[i]) == 0) {
            *out = (px_recompute)i;
            return PX_OK;
        }
    return PX_FAIL(err, PX_ERR_INVALID,
                   "recompute \"%s\": allowed values are none, selective, full", s);
}

const char *const px_rc_module_names[PX_RCM_COUNT] = {
    "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"};

int px_rc_module_find(const char *name, size_t len)
{
    for (int i = 0; i < PX_RCM_COUNT; i++)
        if (strlen(px_rc_module_names[i]) == len && strncmp(name, px_rc_module_names[i], len) == 0)
            return i;
    return -1;
}

px_status px_rc_modules_parse(const char *list, unsigned *out, px_error *err)
{
    unsigned set = 0;
    const char *p = list ? list : "";
    for (;;) {
        size_t len = strcspn(p, ",");
        int found = px_rc_module_find(p, len);
        if (found < 0 || (set & (1u << found)))
            return PX_FAIL(err, PX_ERR_INVALID,
                           "recompute modules \"%s\": %s \"%.*s\"; allowed: a comma-separated "
                           "list of core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, "
                           "shared_experts, each once",
                           list ? list : "", found < 0 ? "unknown module" : "repeated module",
                           (int)len, p);
        set |= 1u << found;
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    *out = set;
    return PX_OK;
}

int px_rc_modules_format(unsigned set, char *buf, size_t n)
{
    int used = 0;
    if (n > 0)
        buf[0] = '\0';
    for (int i = 0; i < PX_RCM_COUNT; i++)
        if (set & (1u << i)) {
            size_t at = (size_t)used < n ? (size_t)used : n;
            used += snprintf(buf + at, n - at, "%s%s", used ? "," : "", px_rc_module_names[i]);
        }
    return used;
}

void px_parallel_init(px_parallel *p)
{
    memset(p, 0, sizeof *p);
    p->tp = p->cp = p->pp = p->vpp = p->dp = 1;
    p->ep = p->etp = 1;
    p->sp = false;
    p->zero = 0;
    p->grad_fp32 = true;       /* Megatron's default: fp32 main gradients */
    p->flash_attention = true; /* every modern trainer uses it */
    p->attn_kernel = PX_AK_FRAMEWORK;
    p->dp_overlap = true;      /* bucketed gradient reduction under the backward */
    p->tp_overlap = true;      /* async backward TP collectives under their GEMMs */
    p->tp_comm_overlap = false; /* Megatron-Core's and torchtitan's default */
    p->moe_a2a_overlap = false; /* Megatron-Core's default */
    p->moe_dispatcher = PX_MOE_ALLTOALL;
    p->schedule = PX_SCHED_1F1B;
    p->recompute = PX_RECOMPUTE_NONE;
    p->recompute_modules = PX_RCM_DEFAULT;
    p->micro_batch = 1;
    p->n_micro = 1;
    p->seq_len = 0; /* 0: the model's default */
    p->precision = PX_PREC_BF16;
    p->cp_comm = PX_CPC_P2P;
    p->quantized_params = true;
    px_finetune_init(&p->finetune);
    px_offload_init(&p->offload);
    snprintf(p->order, sizeof p->order, "%s", "tp-cp-ep-pp-dp");
}

int64_t px_parallel_global_batch(const px_parallel *p)
{
    return p->micro_batch * p->n_micro * p->dp;
}

int px_parallel_gpus(const px_parallel *p)
{
    return p->tp * p->cp * p->pp * p->dp;
}

int px_parallel_chunk_layers(const px_parallel *p, int64_t n_layers, int c)
{
    return p->n_chunks > 0 ? p->layers_per_chunk[c] : (int)(n_layers / (p->pp * p->vpp));
}

int px_parallel_block_recompute(const px_parallel *p, int64_t n_layers)
{
    int chunks = p->pp * p->vpp;
    if (p->n_layer_recompute != n_layers || chunks < 1 || chunks > PX_MAX_CHUNKS ||
        (p->n_chunks == 0 && n_layers % chunks != 0))
        return -1;
    /* chunk c of len layers recomputes its first k: N = k where k < len
     * (the same in every such chunk); a chunk recomputing all its layers
     * needs N >= len */
    int first = 0, n = -1, longest_full = 0;
    for (int c = 0; c < chunks; c++) {
        int len = px_parallel_chunk_layers(p, n_layers, c), k = 0;
        if (len < 0 || first + len > n_layers)
            return -1;
        if (len == 0)
            continue; /* an empty end chunk (the embedding's or the loss's) */
        while (k < len && p->layer_recompute[first + k] == PX_RECOMPUTE_FULL)
            k++;
        for (int i = k; i < len; i++)
            if (p->layer_recompute[first + i] != PX_RECOMPUTE_NONE)
                return -1;
        if (k == len && len > longest_full)
            longest_full = len;
        if (k < len) {
            if (n >= 0 && n != k)
                return -1;
            n = k;
        }
        first += len;
    }
    if (first != n_layers)
        return -1;
    if (n < 0)
        return longest_full; /* every chunk recomputes all of its layers */
    return longest_full <= n ? n : -1;
}

void px_parallel_set_block_recompute(px_parallel *p, int64_t n_layers, int n)
{
    int chunks = p->pp * p->vpp, first = 0;
    if (n_layers < 1 || n_layers > PX_MAX_LAYERS || chunks < 1 || chunks > PX_MAX_CHUNKS ||
        (p->n_chunks == 0 && n_layers % chunks != 0))
        return; /* an uneven split is always recorded */
    for (int c = 0; c < chunks; c++) {
        int len = px_parallel_chunk_layers(p, n_layers, c);
        for (int k = 0; k < len && first + k < n_layers; k++)
            p->layer_recompute[first + k] =
                (unsigned char)(k < n ? PX_RECOMPUTE_FULL : PX_RECOMPUTE_NONE);
        first += len;
    }
    p->n_layer_recompute = (int)n_layers;
}
