/* px_validate.c — published runs in, predictions and errors out; see
 * px_validate.h and docs/validation.md. */
#include "px_validate.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "px_cost.h"
#include "px_framework.h"
#include "px_precision.h"
#include "px_model_defs.h"
#include "px_split_megatron.h"
#include "px_validate_recipe.h"

/* ------------------------------------------------------------------ */
/* JSON helpers: a null or missing field reads as "unpublished"        */

static bool jnum(const json_t *obj, const char *key, double *out)
{
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || !json_is_number(v))
        return false;
    *out = json_number_value(v);
    return true;
}

static int64_t jint_or(const json_t *obj, const char *key, int64_t dflt)
{
    double d;
    return jnum(obj, key, &d) ? (int64_t)llround(d) : dflt;
}

static double jpos_or(const json_t *obj, const char *key, double dflt)
{
    double d;
    return jnum(obj, key, &d) && d > 0.0 ? d : dflt;
}

static const char *jstr(const json_t *obj, const char *key)
{
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    return v && json_is_string(v) ? json_string_value(v) : NULL;
}

static bool starts_with_ci(const char *s, const char *prefix)
{
    if (!s)
        return false;
    for (; *prefix; s++, prefix++)
        if (tolower((unsigned char)*s) != tolower((unsigned char)*prefix))
            return false;
    return true;
}

static bool contains_ci(const char *s, const char *needle)
{
    if (!s)
        return false;
    for (; *s; s++)
        if (starts_with_ci(s, needle))
            return true;
    return false;
}

/* First "19xx"/"20xx" in s, 0 if none. */
static int year_in(const char *s)
{
    if (!s)
        return 0;
    for (const char *p = s; p[0] && p[1] && p[2] && p[3]; p++) {
        if ((p[0] == '1' && p[1] == '9') || (p[0] == '2' && p[1] == '0')) {
            if (isdigit((unsigned char)p[2]) && isdigit((unsigned char)p[3]) &&
                (p == s || !isdigit((unsigned char)p[-1])) && !isdigit((unsigned char)p[4]))
                return (int)strtol(p, NULL, 10);
        }
    }
    return 0;
}

/* NeMo's container release "NeMo YY.MM" as YY * 100 + MM, 0 when the
 * framework names none. */
static int nemo_release(const char *fw)
{
    const char *p = fw ? strstr(fw, "NeMo ") : NULL;
    if (!p)
        return 0;
    p += 5;
    if (!isdigit((unsigned char)p[0]) || !isdigit((unsigned char)p[1]) || p[2] != '.' ||
        !isdigit((unsigned char)p[3]) || !isdigit((unsigned char)p[4]))
        return 0;
    return (p[0] - '0') * 1000 + (p[1] - '0') * 100 + (p[3] - '0') * 10 + (p[4] - '0');
}

/* ------------------------------------------------------------------ */
/* Row → model, hardware, published dimensions                          */

/* The row's GPU and memory -> a hardware profile (shared/data/README.md):
 * V100 v100; A100 40 GB a100-40g, other A100 a100-80g (Selene); H100
 * h100-sxm; GB200 gb200-nvl72.  The profile carries the NVLink and per-GPU
 * InfiniBand bandwidths. */
static const char *profile_for_gpu(const char *gpu, double mem_gb)
{
    if (contains_ci(gpu, "V100"))
        return "v100";
    if (contains_ci(gpu, "A100"))
        return mem_gb > 0 && mem_gb <= 40.5 ? "a100-40g" : "a100-80g";
    if (contains_ci(gpu, "H100"))
        return "h100-sxm";
    if (contains_ci(gpu, "H200"))
        return "h200";
    if (contains_ci(gpu, "H800"))
        return "h800";
    if (contains_ci(gpu, "GB200"))
        return "gb200-nvl72";
    if (contains_ci(gpu, "B200"))
        return "b200";
    return NULL;
}

/* A cluster whose network differs from the DGX-class one its GPU's profile
 * describes has a profile of its own, chosen when the row's
 * hardware.interconnect names the cluster and its GPU maps to the profile
 * the cluster's replaces: Jean Zay's A100 80GB partition (BLOOM) has 4 x
 * 100 Gb/s Omni-Path a node of 8 GPUs, a quarter of a DGX A100's 8 x 200
 * Gb/s HDR (hw_profiles/jean-zay-a100.json). */
static const char *profile_for_cluster(const char *interconnect, const char *by_gpu)
{
    static const struct {
        const char *cluster, *replaces, *profile;
    } clusters[] = {{"Jean Zay", "a100-80g", "jean-zay-a100"}};
    for (size_t i = 0; i < sizeof clusters / sizeof clusters[0]; i++)
        if (by_gpu && !strcmp(by_gpu, clusters[i].replaces) &&
            contains_ci(interconnect, clusters[i].cluster))
            return clusters[i].profile;
    return by_gpu;
}

/* The row's precision -> the format the cost model runs (README: bf16,
 * amp_bf16 and "fp16/bf16" -> bf16; fp16 -> fp16; fp8 -> fp8; a row that
 * states none is taken as bf16, the planner's format).  The one
 * place a precision is mapped and judged: returns false with a note for a
 * format the cost model does not model yet. */
static bool row_precision(const char *s, px_val_row *row)
{
    row->precision = -1;
    if (!s || starts_with_ci(s, "bf16") || starts_with_ci(s, "amp_bf16") ||
        starts_with_ci(s, "fp16/bf16"))
        row->precision = PX_PREC_BF16;
    else if (starts_with_ci(s, "fp16"))
        row->precision = PX_PREC_FP16;
    else if (starts_with_ci(s, "fp8"))
        row->precision = PX_PREC_FP8;
    if (row->precision >= 0)
        return true;
    snprintf(row->note, sizeof row->note, "precision %s not modelled (bf16, fp16, fp8 are)",
             s ? s : "(null)");
    return false;
}

/* The row's framework -> a profile of frameworks/ (README): llm-foundry or
 * Metaseq -> llm-foundry (PyTorch FSDP); MaxText or Paxml -> maxtext;
 * everything else (Megatron-LM, Megatron-DeepSpeed, NeMo) -> megatron. */
static const char *framework_for(const char *fw)
{
    if (contains_ci(fw, "llm-foundry") || contains_ci(fw, "Composer") ||
        contains_ci(fw, "Metaseq"))
        return "llm-foundry";
    if (contains_ci(fw, "MaxText") || contains_ci(fw, "Paxml"))
        return "maxtext";
    return "megatron";
}

/* A ZeRO-3 row of a comparison with DeepSpeed ZeRO-3 ("Megatron-LM (PTD-P)
 * vs DeepSpeed ZeRO-3": Narayanan et al. 2021, Table 2) ran DeepSpeed's
 * ZeRO-3, not Megatron's layers. */
static const char *framework_for_row(const char *fw, int zero)
{
    if (zero == 3 && contains_ci(fw, "DeepSpeed ZeRO-3"))
        return "deepspeed";
    return framework_for(fw);
}

static int parse_recompute(const char *s)
{
    if (!s)
        return -1;
    if (starts_with_ci(s, "full"))
        return PX_RECOMPUTE_FULL;
    if (starts_with_ci(s, "selective"))
        return PX_RECOMPUTE_SELECTIVE;
    if (starts_with_ci(s, "none"))
        return PX_RECOMPUTE_NONE;
    return -1;
}

static int tri_bool(const json_t *obj, const char *key)
{
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v || !json_is_boolean(v))
        return -1;
    return json_is_true(v) ? 1 : 0;
}

static bool has_key_value(const json_t *obj, const char *key)
{
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    return v && !json_is_null(v);
}

/* The model of a row: a Hugging Face style config (README) — llama-type
 * (RMSNorm, SwiGLU, RoPE, untied) when the MLP is gated, gpt2-type
 * (LayerNorm, GeLU, learned positions, biases, tied) otherwise; MoE rows
 * qwen3_moe-type (gated experts, every layer routed unless moe_layers says
 * fewer).  MLA rows are not modelled by this mapping. */
static bool row_model(const json_t *jm, const char *framework, px_val_row *row)
{
    px_model *m = &row->model;
    const char *notes = jstr(jm, "arch_notes");
    /* an unpublished vocabulary: the framework's model definition of that
     * shape, when it has one (px_model_defs.h) */
    int64_t def_vocab = 0;
    if (jint_or(jm, "vocab", 0) <= 0)
        px_model_def_vocab(framework, jint_or(jm, "layers", 0), jint_or(jm, "hidden", 0),
                           jint_or(jm, "heads", 0), &def_vocab, NULL);
    static const char *const need[] = {"layers", "hidden", "heads", "vocab", "seq_len"};
    for (int i = 0; i < 5; i++)
        if (jint_or(jm, need[i], 0) <= 0 && !(i == 3 && def_vocab > 0)) {
            snprintf(row->note, sizeof row->note, "model.%s unpublished", need[i]);
            return false;
        }
    const json_t *moe = json_object_get(jm, "moe");
    row->moe = moe && json_is_object(moe);
    if (contains_ci(notes, "MLA")) {
        snprintf(row->note, sizeof row->note, "multi-head latent attention rows not modelled");
        return false;
    }
    bool gated = row->moe || contains_ci(notes, "SwiGLU") || contains_ci(notes, "GeGLU");
    snprintf(m->name, sizeof m->name, "%.63s", row->id);
    m->block = gated ? PX_BLOCK_LLAMA : PX_BLOCK_GPT;
    m->attn = PX_ATTN_STANDARD;
    m->hidden = jint_or(jm, "hidden", 0);
    m->n_layers = jint_or(jm, "layers", 0);
    m->n_heads = jint_or(jm, "heads", 0);
    m->n_kv_heads = jint_or(jm, "kv_heads", m->n_heads);
    m->head_dim = m->n_heads > 0 ? m->hidden / m->n_heads : 0;
    m->vocab = jint_or(jm, "vocab", def_vocab);
    m->seq_len = jint_or(jm, "seq_len", 0);
    m->max_positions = gated ? 0 : m->seq_len;
    m->tied_embeddings = !gated;
    m->qkv_bias = !gated;
    m->moe_layer_freq = 1;
    if (row->moe) {
        m->n_experts = jint_or(moe, "experts", 0);
        m->top_k = jint_or(moe, "top_k", 1);
        m->moe_ffn = jint_or(moe, "expert_ffn", 0);
        m->n_shared_experts = jint_or(moe, "shared_experts", 0);
        int64_t moe_layers = jint_or(moe, "moe_layers", m->n_layers);
        if (moe_layers < m->n_layers)
            m->first_dense_layers = m->n_layers - moe_layers;
    }
    m->ffn = jint_or(jm, "ffn", row->moe ? m->moe_ffn : 4 * m->hidden);
    px_error e;
    if (px_model_validate(m, &e) != PX_OK) {
        snprintf(row->note, sizeof row->note, "%.150s", e.msg);
        return false;
    }
    return true;
}

/* Family: id prefix / framework profile / GPU / precision / dense|moe. */
static void row_family(const json_t *jr, px_val_row *row)
{
    const char *id = row->id, *dash = strchr(id, '-');
    int plen = dash ? (int)(dash - id) : (int)strlen(id);
    const char *gpu = jstr(json_object_get(jr, "hardware"), "gpu");
    static const char *const prec[] = {"bf16", "fp16", "fp8"};
    const char *p = row->precision >= 0 && row->precision <= 2 ? prec[row->precision] : "other";
    snprintf(row->family, sizeof row->family, "%.*s/%s/%.12s/%s/%s", plen > 24 ? 24 : plen, id,
             row->framework, gpu ? gpu : "?", p, row->moe ? "moe" : "dense");
}

/* The measured figures of a row and the FLOP convention they count by. */
static void row_measured(const json_t *je, px_val_row *row)
{
    row->meas_tflops = jpos_or(je, "tflops_per_gpu", -1.0);
    row->meas_mfu = jpos_or(je, "mfu", -1.0);
    row->meas_hfu = jpos_or(je, "hfu", -1.0);
    row->meas_step_s = jpos_or(je, "step_time_s", -1.0);
    row->meas_tok_gpu = jpos_or(je, "tokens_per_sec_per_gpu", -1.0);
    double fwd_ms = jpos_or(je, "layer_forward_ms", -1.0),
           bwd_ms = jpos_or(je, "layer_backward_ms", -1.0);
    if (fwd_ms > 0 && bwd_ms > 0) {
        row->meas_layer_fwd_s = fwd_ms * 1e-3;
        row->meas_layer_bwd_s = bwd_ms * 1e-3;
    }
    /* the FLOP convention: an HFU metric (or an HFU without an MFU) counts
     * the recomputed forward in its TFLOP/s */
    const char *um = jstr(je, "util_metric");
    row->conv = (starts_with_ci(um, "HFU") || (row->meas_hfu > 0 && row->meas_mfu <= 0 &&
                                               !starts_with_ci(um, "MFU")))
                    ? PX_VAL_CONV_HW
                    : PX_VAL_CONV_MODEL;
    row->conv_stated = starts_with_ci(um, "HFU") || starts_with_ci(um, "MFU") ||
                       row->meas_hfu > 0 || row->meas_mfu > 0;
}

/* The parallel layout: published values fixed, the rest derived; ZeRO and
 * the framework profile it selects.  False (with row->note) when the sizes
 * do not multiply to the GPUs or ask for experts on a dense model. */
static bool row_parallel(const json_t *jr, const json_t *jp, px_val_row *row)
{
    /* parallel: published values fixed, nulls free; cp follows from
     * tp·pp·dp when it is not published */
    row->tp = (int)jint_or(jp, "tp", 1);
    row->pp = (int)jint_or(jp, "pp", 1);
    row->vpp = (int)jint_or(jp, "vpp", 0);
    row->dp = (int)jint_or(jp, "dp", 0);
    row->cp = (int)jint_or(jp, "cp", 0);
    row->ep = (int)jint_or(jp, "ep", 1);
    row->etp = (int)jint_or(jp, "etp", 0);
    if (row->cp <= 0)
        row->cp = row->dp > 0 && row->tp > 0 && row->pp > 0 &&
                          row->gpus % (row->tp * row->pp * row->dp) == 0
                      ? row->gpus / (row->tp * row->pp * row->dp)
                      : 1;
    if (row->dp <= 0 && row->tp > 0 && row->pp > 0 && row->cp > 0)
        row->dp = row->gpus / (row->tp * row->pp * row->cp);
    if (row->tp < 1 || row->pp < 1 || row->dp < 1 || row->cp < 1 ||
        (int64_t)row->tp * row->pp * row->dp * row->cp != row->gpus) {
        snprintf(row->note, sizeof row->note, "tp %d x cp %d x pp %d x dp %d != %d GPUs",
                 row->tp, row->cp, row->pp, row->dp, row->gpus);
        return false;
    }
    if (!row->moe && row->ep > 1) {
        snprintf(row->note, sizeof row->note, "ep %d on a dense model", row->ep);
        return false;
    }
    row->sp = tri_bool(jp, "sp");
    /* fsdp true or a shard-group size => ZeRO-3 (a size below the
     * data-parallel degree is hybrid sharding) */
    json_t *jf = json_object_get(jp, "fsdp");
    if (jf && (json_is_true(jf) || json_is_integer(jf))) {
        row->zero = 3;
        int64_t g = json_is_integer(jf) ? json_integer_value(jf) : 0;
        if (g > 0 && g < (int64_t)row->dp * row->cp)
            row->shard_group = (int)g;
    } else {
        row->zero = (int)jint_or(jp, "zero_stage", -1);
    }
    snprintf(row->framework, sizeof row->framework, "%s",
             framework_for_row(jstr(jr, "framework"), row->zero));
    row_family(jr, row);
    row->recompute = parse_recompute(jstr(jp, "recompute"));
    row->micro_batch = jint_or(jp, "micro_batch", 0);
    row->global_batch = jint_or(jp, "global_batch", 0);
    return true;
}

/* What a run of its framework and year did when the row does not say:
 * FlashAttention and its version, gradient and TP overlap, sequence
 * parallelism, recompute, gradient precision. */
static void row_era_defaults(const json_t *jr, const json_t *jp, const json_t *js,
                             px_val_row *row)
{
    /* FlashAttention (2022) reached Megatron in 2023: runs published before
     * then materialise the s x s scores (fused softmax kernels) */
    int year = year_in(jstr(jr, "framework"));
    if (year == 0)
        year = year_in(jstr(js, "ref"));
    row->flash_attention = year == 0 || year >= 2023;
    row->modelled = true;
    /* Megatron-LM all-reduced gradients after the backward (local DDP) until
     * --overlap-grad-reduce (2023); a row that lists its overlap flags says */
    const char *ov = jstr(jp, "comm_overlap");
    row->dp_overlap = ov ? contains_ci(ov, "overlap-grad-reduce") : (year == 0 || year >= 2023);
    /* the asynchronous backward TP all-reduce came with Megatron's 2022
     * sequence-parallel release; the 2021 runs blocked on it */
    row->tp_overlap = year == 0 || year >= 2022;
    /* sequence parallelism is Megatron's 2022 release: earlier runs had none */
    if (row->sp < 0 && year > 0 && year < 2022)
        row->sp = 0;
    /* Megatron-DeepSpeed runs its layers under DeepSpeed's pipeline engine,
     * which reduces the gradients after the last backward (TrainSchedule:
     * ReduceGrads before OptimizerStep); its fork of Megatron's layers
     * predates the asynchronous TP all-reduce and sequence parallelism, and
     * FlashAttention is opt-in there (--use-flash-attn, default off) */
    /* Megatron-LM's 2021 local DDP kept main gradients (main_grad, a
     * contiguous buffer) and a hook added each micro-batch's gradient into
     * them; the fused accumulation in the weight-gradient GEMM
     * (gradient_accumulation_fusion) came with the 2022 layers of the
     * asynchronous TP all-reduce (LinearWithGradAccumulationAndAsyncCommunication).
     * The 2020 code had no main gradients: autograd accumulated the fp16
     * .grad and the optimizer copied it to fp32 at the step (the optimizer's
     * extras) */
    row->grad_accum_separate = year == 2021 && !strcmp(row->framework, "megatron");
    if (contains_ci(jstr(jr, "framework"), "Megatron-DeepSpeed")) {
        row->dp_overlap = ov ? row->dp_overlap : false;
        row->tp_overlap = false;
        row->flash_attention = false;
        if (row->sp < 0)
            row->sp = 0;
        /* DeepSpeed's BF16 optimizer (its ZeRO-1 under the pipeline engine)
         * adds every micro-batch's bf16 gradients into the fp32 ones after
         * the backward (PipelineEngine._exec_backward_pass: update_hp_grads),
         * and the engine all-reduces the whole fp32 gradient before the
         * step (_exec_reduce_grads: _bf16_reduce_grads,
         * buffered_allreduce_fallback); each replica then updates its shard
         * and all-gathers the bf16 weights */
        row->grad_accum_separate = true;
        row->zero1_grad_allreduce = row->precision == PX_PREC_BF16;
        /* its pipeline engine's blocking transfers and tied-gradient
         * all-reduce (px_pipe_engine.h) */
        row->deepspeed_pipe = true;
    }
    /* Megatron-LM's 2020 training scripts (examples/pretrain_gpt*.sh)
     * always pass --checkpoint-activations: full recompute when unpublished */
    if (row->recompute < 0 && year > 0 && year <= 2020 && !strcmp(row->framework, "megatron"))
        row->recompute = PX_RECOMPUTE_FULL;
    /* Paxml's language-model experiments inherit CHECKPOINT_POLICY =
     * SAVE_NOTHING (paxml/tasks/lm/model_params.py, TransformerLmSpmdAdafactor):
     * every layer recomputed, when a run does not say otherwise */
    if (row->recompute < 0 && starts_with_ci(jstr(jr, "framework"), "Paxml"))
        row->recompute = PX_RECOMPUTE_FULL;
    /* a run of the torch 1.13 era predates FlashAttention-2 (July 2023) and
     * ran flash-attn 1 (the llm-foundry benchmark tables: "torch 1.13/2.x
     * era"; their README: "TODO: Update tables with torch 2.0 after next
     * Composer release") */
    if (contains_ci(jstr(jr, "notes"), "torch 1.13"))
        row->flash_version = 1;
    /* NeMo containers before 24.07 ship Transformer Engine 1.7 or older,
     * whose DotProductAttention prefers flash-attn 2 over cuDNN's fused
     * attention on every GPU (and runs CP only with it); TE 1.8 made cuDNN's
     * Hopper kernels the choice (frameworks/megatron.json) */
    int nemo = nemo_release(jstr(jr, "framework"));
    if (nemo > 0 && nemo < 2407)
        row->flash_version = 2;
    /* a recipe that forces the backend (px_validate_recipe.c) */
    int recipe_flash = px_val_recipe_flash_version(jstr(jr, "framework"), jstr(js, "location"));
    if (recipe_flash > 0)
        row->flash_version = recipe_flash;
    /* gradient precision is not published: the recipe's where it is known
     * (px_validate_recipe.c), else Megatron's default, fp32 main gradients
     * (the planner's default too) */
    int grad_fp32 = px_val_recipe_grad_fp32(jstr(jr, "framework"));
    row->grad_fp32 = grad_fp32 != 0;
}

/* How the row's run differed from its framework profile's defaults
 * (row_era_defaults): the profile's runtime traits it overrides. */
static void row_runtime(const px_val_row *row, px_fw_runtime *run)
{
    if (row->flash_version > 0)
        run->flash_attention_version = row->flash_version;
    if (row->grad_accum_separate)
        run->grad_accum_separate = true;
    if (row->zero1_grad_allreduce)
        run->zero1_grad_allreduce = true;
    /* DeepSpeed's pipeline engine; in bf16 its BF16 optimizer, whose
     * accumulation casts into a temporary */
    if (row->deepspeed_pipe) {
        run->pp_blocking_p2p = true;
        run->tied_grad_allreduce = true;
        run->grad_accum_cast_copy = row->precision == PX_PREC_BF16;
    }
}

/* Fills one row; returns false (with row->note) when it cannot be modelled. */
static bool parse_row(const json_t *jr, px_val_row *row)
{
    memset(row, 0, sizeof *row);
    const char *id = jstr(jr, "id"), *group = jstr(jr, "group");
    snprintf(row->id, sizeof row->id, "%s", id ? id : "?");
    snprintf(row->group, sizeof row->group, "%s", group ? group : "?");
    row->meas_tflops = row->meas_mfu = row->meas_hfu = row->meas_step_s = -1.0;
    row->meas_layer_fwd_s = row->meas_layer_bwd_s = -1.0;
    row->meas_tok_gpu = row->pred_tok_gpu = -1.0;
    row->cp = row->ep = 1;

    const json_t *jm = json_object_get(jr, "model"), *jh = json_object_get(jr, "hardware"),
                 *jp = json_object_get(jr, "parallel"), *je = json_object_get(jr, "measured"),
                 *js = json_object_get(jr, "source");

    row_measured(je, row);

    /* usable (README): dense or MoE, tp, pp and dp published, and a measured
     * tokens/s per GPU, MFU or step time */
    row->usable = jm && has_key_value(jp, "tp") && has_key_value(jp, "pp") &&
                  has_key_value(jp, "dp") &&
                  (row->meas_tok_gpu > 0 || row->meas_mfu > 0 || row->meas_step_s > 0);
    snprintf(row->framework, sizeof row->framework, "%s", framework_for(jstr(jr, "framework")));
    bool prec_ok = row_precision(jstr(jr, "precision"), row);
    const json_t *moe = jm ? json_object_get(jm, "moe") : NULL;
    row->moe = moe && json_is_object(moe);
    row_family(jr, row);
    if (!prec_ok)
        return false;

    /* hardware */
    double mem_gb;
    const char *prof = profile_for_gpu(jstr(jh, "gpu"), jnum(jh, "gpu_memory_gb", &mem_gb) ? mem_gb : 0.0);
    prof = profile_for_cluster(jstr(jh, "interconnect"), prof);
    row->gpus = (int)jint_or(jh, "num_gpus", 0);
    row->gpus_per_node = (int)jint_or(jh, "gpus_per_node", 0);
    if (!prof) {
        snprintf(row->note, sizeof row->note, "no profile for gpu \"%s\"",
                 jstr(jh, "gpu") ? jstr(jh, "gpu") : "(null)");
        return false;
    }
    snprintf(row->hw_name, sizeof row->hw_name, "%s", prof);
    if (!jm || !row_model(jm, jstr(jr, "framework"), row))
        return false;

    if (!row_parallel(jr, jp, row))
        return false;
    row_era_defaults(jr, jp, js, row);
    return true;
}

/* ------------------------------------------------------------------ */

px_status px_validate_load(const char *path, const char *profiles_dir, px_val_report *out,
                           px_error *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    if (profiles_dir)
        snprintf(out->profiles_dir, sizeof out->profiles_dir, "%s", profiles_dir);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) {
        bool io = jerr.line <= 0;
        return px_error_set(err, io ? PX_ERR_IO : PX_ERR_PARSE, path, io ? 0 : jerr.line,
                            io ? 0 : jerr.column, "%s", jerr.text);
    }
    if (!json_is_array(root) || json_array_size(root) == 0) {
        json_decref(root);
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "top level: expected a non-empty array of published runs");
    }
    size_t n = json_array_size(root);
    out->rows = calloc(n, sizeof *out->rows);
    if (!out->rows) {
        json_decref(root);
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory for %zu rows", n);
    }
    out->n_rows = (int)n;
    for (size_t i = 0; i < n; i++) {
        json_t *jr = json_array_get(root, i);
        if (!json_is_object(jr)) {
            json_decref(root);
            px_validate_free(out);
            return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                                "row %zu: expected an object", i);
        }
        px_val_row *row = &out->rows[i];
        if (!parse_row(jr, row))
            continue;
        /* the profile the row's cluster maps to must load (checked once here) */
        px_hw hw;
        px_error e;
        if (px_hw_load(row->hw_name, profiles_dir, &hw, &e) != PX_OK) {
            json_decref(root);
            px_validate_free(out);
            if (err)
                *err = e;
            return e.code;
        }
    }
    json_decref(root);

    /* a row without a global batch borrows it from a companion run of the
     * same model on the same split (the abstract's 2240-GPU runs are Table 2's) */
    for (int i = 0; i < out->n_rows; i++) {
        px_val_row *r = &out->rows[i];
        if (r->global_batch > 0 || !r->modelled)
            continue;
        for (int j = 0; j < out->n_rows; j++) {
            const px_val_row *c = &out->rows[j];
            if (j == i || !c->modelled || c->global_batch <= 0 ||
                c->model.hidden != r->model.hidden ||
                c->model.n_layers != r->model.n_layers || c->gpus != r->gpus ||
                c->tp != r->tp || c->pp != r->pp || c->dp != r->dp)
                continue;
            r->global_batch = c->global_batch;
            r->global_batch_borrowed = true;
            snprintf(r->note, sizeof r->note, "global batch %lld from %.96s",
                     (long long)c->global_batch, c->id);
            break;
        }
    }
    return PX_OK;
}

void px_validate_free(px_val_report *r)
{
    free(r->rows);
    r->rows = NULL;
    r->n_rows = 0;
}

/* ------------------------------------------------------------------ */
/* Prediction: search over what the row leaves unpublished             */

static double score_of(const px_prediction *p)
{
    return p->time.step_s;
}

/* Expert tensor parallelism when unpublished: Megatron-Core's default,
 * the dense TP (--expert-tensor-parallel-size defaults to
 * --tensor-model-parallel-size), when ep x tp fits the tp·cp·dp GPUs of a
 * stage; else 1. */
static int row_etp(const px_val_row *row)
{
    if (!row->moe)
        return 1;
    if (row->etp > 0)
        return row->etp;
    int64_t stage = (int64_t)row->tp * row->cp * row->dp;
    return stage % ((int64_t)row->ep * row->tp) == 0 ? row->tp : 1;
}

/* Layers that do not divide over pp x vpp chunks: with one chunk a stage the
 * planner's balanced uneven split; interleaved, Megatron's split with the
 * embedding and the loss counted as pipeline layers (px_split_megatron.h). */
static bool row_split(const px_model *m, px_parallel *par, const char **why)
{
    par->n_chunks = 0;
    int chunks = par->pp * par->vpp;
    if (m->n_layers % chunks == 0)
        return true;
    if (par->vpp == 1)
        return px_cost_record_split(m, par) || true;
    /* an empty end chunk is refused later unless the framework runs it */
    px_megatron_split how = {0, 0, true, true, true};
    if (chunks > PX_MAX_CHUNKS || !px_split_megatron(m->n_layers, par->pp, par->vpp, &how,
                                                     par->layers_per_chunk)) {
        *why = "layers do not split over pp x vpp chunks, also with the embedding and loss "
               "counted as pipeline layers";
        return false;
    }
    par->n_chunks = chunks;
    return true;
}

/* A row's gpus_per_node counts the GPUs of one host; they replace the
 * profile's node unless the profile's fast domain spans several hosts
 * (gpus_per_host: GB200 NVL72's trays of 4 on one NVLink domain of 72) and
 * the row gives the host's size. */
static void row_node_size(const px_val_row *row, px_hw *hw)
{
    int g = row->gpus_per_node;
    if (g <= 0 || (hw->gpus_per_host > 0 && g == hw->gpus_per_host))
        return;
    hw->gpus_per_node = g;
}

/* Whether a row's published tokens/s per GPU is the throughput of its
 * published step: global batch x sequence length / step time / GPUs within
 * PX_VALIDATE_TOKENS_STEP_TOL.  Two cells of one table row that disagree by
 * more (a halved aggregate, a per-node figure) cannot both be the run; the
 * step time and the MFU agree with each other there, so the comparison
 * falls back to them.  True when the check cannot be made. */
static bool tokens_agree_with_step(const px_val_row *row)
{
    if (row->meas_step_s <= 0 || row->global_batch <= 0 || row->global_batch_borrowed ||
        row->gpus <= 0 || row->model.seq_len <= 0)
        return true;
    double implied = (double)row->global_batch * (double)row->model.seq_len /
                     row->meas_step_s / row->gpus;
    return fabs(row->meas_tok_gpu / implied - 1.0) <= PX_VALIDATE_TOKENS_STEP_TOL;
}

/* The published-runs comparison (shared/data/README.md): tokens/s per GPU
 * when published (and consistent with the published step), else MFU, else
 * step time; + means predicted too fast. */
static void family_error(px_val_row *row)
{
    const px_prediction *p = &row->pred;
    row->pred_tok_gpu = row->gpus > 0 ? p->tokens_per_s / row->gpus : 0.0;
    row->fam_on = 0;
    if (!row->usable || row->refused || p->time.step_s <= 0)
        return;
    if (row->meas_tok_gpu > 0 && tokens_agree_with_step(row)) {
        row->fam_on = 1;
        row->fam_err = row->pred_tok_gpu / row->meas_tok_gpu - 1.0;
    } else if (row->meas_mfu > 0) {
        row->fam_on = 2;
        row->fam_err = p->mfu / row->meas_mfu - 1.0;
    } else if (row->meas_step_s > 0) {
        row->fam_on = 3;
        row->fam_err = row->meas_step_s / p->time.step_s - 1.0;
    }
}

/* The global batch the row's layout runs (one micro-batch where it is
 * unpublished; the nearest the layout divides), as sequences per replica;
 * says so in row->note. */
static int64_t row_per_replica(px_val_row *row)
{
    /* per-layer rows need a micro-batch but no step: one micro-batch */
    int64_t gb = row->global_batch;
    if (gb <= 0) {
        gb = (row->micro_batch > 0 ? row->micro_batch : 1) * row->dp;
        if (!row->note[0])
            snprintf(row->note, sizeof row->note, "global batch unpublished: one micro-batch");
    }
    int64_t unit = (int64_t)row->dp * (row->micro_batch > 0 ? row->micro_batch : 1);
    if (gb % unit != 0) {
        /* the layout runs the nearest global batch it divides (as plan does) */
        int64_t near = (gb + unit / 2) / unit * unit;
        if (near < unit)
            near = unit;
        snprintf(row->note, sizeof row->note,
                 "global batch %lld not divisible by dp x micro-batch %lld: nearest %lld",
                 (long long)gb, (long long)unit, (long long)near);
        gb = near;
    }
    return gb / row->dp;
}

/* One candidate of the row's search: the published layout with micro-batch
 * b (mm of them), vpp v, recompute r, sequence parallelism sp, ZeRO z. */
static void row_candidate(const px_val_row *row, const px_model *m, const px_framework *fw,
                          int64_t b, int64_t mm, int v, int r, int sp, int z, px_parallel *par)
{
    px_parallel_init(par);
    par->tp = row->tp;
    par->pp = row->pp;
    par->dp = row->dp;
    par->cp = row->cp;
    par->ep = row->ep;
    par->etp = row_etp(row);
    par->shard_group = row->shard_group;
    par->vpp = row->pp > 1 ? v : 1;
    par->schedule = par->vpp > 1 ? PX_SCHED_INTERLEAVED : PX_SCHED_1F1B;
    par->sp = sp && row->tp > 1;
    par->zero = z;
    par->recompute = (px_recompute)r;
    par->micro_batch = b;
    par->n_micro = mm;
    par->seq_len = m->seq_len;
    par->flash_attention = row->flash_attention;
    par->dp_overlap = row->dp_overlap;
    par->tp_overlap = row->tp_overlap;
    par->grad_fp32 = row->grad_fp32;
    par->precision = (px_precision)row->precision;
    par->quantized_params = fw->run.quantized_params;
}

/* A row that publishes its TFLOP/s and its step time without saying how it
 * counted the FLOPs counted the ones its TFLOP/s times the step time gives:
 * hardware FLOPs (the recomputed forward included) when that product is
 * nearer to them than to the model FLOPs of the same step (the Megatron-LM
 * 2020 tables and Megatron-Turing NLG count the recomputation, Narayanan
 * et al.'s eq. 3). */
static void row_infer_conv(px_val_row *row, const px_prediction *best)
{
    if (row->conv_stated || row->meas_tflops <= 0 || row->meas_step_s <= 0 ||
        row->global_batch_borrowed || best->model_flops_per_step <= 0 ||
        best->hw_flops_per_step <= best->model_flops_per_step)
        return;
    double implied = row->meas_tflops * 1e12 * row->meas_step_s * row->gpus;
    double to_model = fabs(log(implied / best->model_flops_per_step));
    double to_hw = fabs(log(implied / best->hw_flops_per_step));
    row->conv = to_hw < to_model ? PX_VAL_CONV_HW : PX_VAL_CONV_MODEL;
}

/* Records the best candidate's prediction in row: fit, TFLOP/s, one layer's
 * times, and the error against what the row measured. */
static void row_record(px_val_row *row, px_cost_ctx *ctx, const px_prediction *best,
                       const px_parallel *best_par, bool best_fits, int64_t limit)
{
    if (!best_fits && row->usable) {
        /* the planner would refuse it; the prediction stays for the table */
        row->refused = true;
        snprintf(row->note, sizeof row->note,
                 "does not fit: %.1f GB per GPU > %.1f GB (HBM - reserve)",
                 (double)best->mem.total / 1e9, (double)limit / 1e9);
    }
    row->evaluated = true;
    row->fits = best_fits;
    row->par = *best_par;
    row->pred = *best;
    double step = best->time.step_s;
    row_infer_conv(row, best);
    double flops =
        row->conv == PX_VAL_CONV_HW ? best->hw_flops_per_step : best->model_flops_per_step;
    row->pred_tflops = step > 0 ? flops / step / row->gpus / 1e12 : 0.0;

    /* one transformer layer, one micro-batch: Korthikanti's Table 4 */
    px_layer_cost lc;
    px_cost_layer(ctx, best_par, 0, &lc);
    row->pred_layer_fwd_s = lc.fwd_s;
    row->pred_layer_bwd_s = lc.bwd_s + lc.recompute_s[best_par->recompute];

    if (row->meas_tflops > 0) {
        row->on = PX_VAL_ON_TFLOPS;
        row->err = row->pred_tflops / row->meas_tflops - 1.0;
    } else if (row->meas_step_s > 0) {
        row->on = PX_VAL_ON_STEP;
        row->err = step / row->meas_step_s - 1.0;
    } else if (row->meas_layer_fwd_s > 0) {
        row->on = PX_VAL_ON_LAYER;
        row->err = (row->pred_layer_fwd_s + row->pred_layer_bwd_s) /
                       (row->meas_layer_fwd_s + row->meas_layer_bwd_s) -
                   1.0;
    }
    if (row->meas_step_s > 0 && !row->global_batch_borrowed && row->global_batch > 0)
        row->err_step = step / row->meas_step_s - 1.0;
    family_error(row);
}

/* The micro-batches the row's search tries: the published one, or every
 * divisor of the sequences per replica (up to 64). */
static int row_micro_batches(const px_val_row *row, int64_t per_replica, int64_t bs[64])
{
    int n_b = 0;
    if (row->micro_batch > 0)
        bs[n_b++] = row->micro_batch;
    else
        for (int64_t b = 1; b <= per_replica && n_b < 64; b++)
            if (per_replica % b == 0)
                bs[n_b++] = b;
    return n_b;
}

/* The virtual pipeline sizes it tries: the published one, or 1 and each v
 * up to max_vpp whose p·v divides the layers. */
static int row_vpps(const px_val_row *row, const px_model *m, int max_vpp, int vs[16])
{
    int n_v = 0;
    if (row->vpp > 0)
        vs[n_v++] = row->vpp;
    else {
        vs[n_v++] = 1;
        for (int v = 2; v <= (max_vpp > 0 ? max_vpp : PX_VALIDATE_MAX_VPP) && row->pp > 1; v++)
            if (m->n_layers % ((int64_t)row->pp * v) == 0)
                vs[n_v++] = v;
    }
    return n_v;
}

/* What predicting rows needs beyond the rows, owned by the caller (no
 * static state: the library runs in several threads): the cost context
 * (large), the framework profile (kept while consecutive rows name the same
 * one), the runtime traits a row adjusts, and the candidates' layouts. */
typedef struct {
    px_cost_ctx ctx;
    px_framework fw;
    px_fw_runtime run;
    px_parallel par, best_par;
} px_val_work;

/* The search space of one row: what it publishes, or every choice. */
typedef struct {
    int64_t bs[64];
    int n_b;
    int vs[16];
    int n_v;
    int r0, r1, sp0, sp1, z0, z1;
} row_space;

/* The best candidate so far of one row's search, and why the last refused
 * one was refused. */
typedef struct {
    bool have, fits;
    px_prediction pred;
    const char *why;
    char why_buf[256];
    int n_scored;
} row_best;

/* Loads the row's hardware profile (with the row's node size) into hw and
 * readies w's cost context under the row's framework traits. */
static px_status row_context(const px_val_row *row, const char *profiles_dir, px_val_work *w,
                             px_hw *hw, px_error *err)
{
    px_status st = px_hw_load(row->hw_name, profiles_dir, hw, err);
    if (st != PX_OK)
        return st;
    row_node_size(row, hw);
    st = px_cost_ctx_init(&w->ctx, &row->model, hw, err);
    if (st != PX_OK)
        return st;
    const char *name = row->framework[0] ? row->framework : NULL;
    if (!name || strcmp(w->fw.name, name) != 0) {
        st = px_framework_load(name, NULL, &w->fw, err);
        if (st != PX_OK)
            return st;
    }
    w->run = w->fw.run;
    row_runtime(row, &w->run);
    w->ctx.run = &w->run;
    return PX_OK;
}

static void row_space_init(const px_val_row *row, const px_model *m, int max_vpp,
                           int64_t per_replica, row_space *s)
{
    s->n_b = row_micro_batches(row, per_replica, s->bs);
    s->n_v = row_vpps(row, m, max_vpp, s->vs);
    s->r0 = row->recompute >= 0 ? row->recompute : 0;
    s->r1 = row->recompute >= 0 ? row->recompute : PX_RECOMPUTE_COUNT - 1;
    s->sp0 = row->sp >= 0 ? row->sp : 0;
    s->sp1 = row->sp >= 0 ? row->sp : (row->tp > 1);
    /* Megatron's optimizers: plain (ZeRO 0) or distributed (ZeRO 1) */
    s->z0 = row->zero >= 0 ? row->zero : 0;
    s->z1 = row->zero >= 0 ? row->zero : 1;
}

/* Scores the candidate in w->par and keeps it in best if it ranks first:
 * a fitting plan before one that does not, then the shorter step, then the
 * smaller memory. */
static void row_try(px_val_work *w, const px_model *m, int64_t limit, row_best *best)
{
    if (!row_split(m, &w->par, &best->why))
        return;
    px_error ce;
    if (px_cost_check(m, &w->par, &ce) != PX_OK) {
        snprintf(best->why_buf, sizeof best->why_buf, "%.200s", ce.msg);
        best->why = best->why_buf;
        return;
    }
    const char *cap = NULL;
    if (!px_caps_allow(&w->fw.caps, m, &w->par, &cap)) {
        snprintf(best->why_buf, sizeof best->why_buf,
                 "framework %s cannot run it (capability %s)", w->fw.name, cap);
        best->why = best->why_buf;
        return;
    }
    px_prediction pred;
    if (px_cost_eval(&w->ctx, &w->par, 0.0, 0.0, &pred, NULL, NULL) != PX_OK)
        return;
    best->n_scored++;
    bool fits = pred.mem.total <= limit;
    const px_prediction *b = &best->pred;
    bool take = !best->have || (fits && !best->fits) ||
                (fits == best->fits &&
                 (score_of(&pred) < score_of(b) * (1.0 - 1e-12) ||
                  (score_of(&pred) <= score_of(b) && pred.mem.total < b->mem.total)));
    if (take) {
        best->have = true;
        best->fits = fits;
        best->pred = pred;
        w->best_par = w->par;
    }
}

static px_status predict_row(px_val_row *row, const char *profiles_dir, int max_vpp,
                             px_val_work *w, px_error *err)
{
    px_hw hw;
    px_status st = row_context(row, profiles_dir, w, &hw, err);
    if (st != PX_OK)
        return st;
    const px_model *m = &row->model;
    int64_t limit = hw.hbm_bytes - hw.mem_reserve_bytes;
    int64_t per_replica = row_per_replica(row);
    row_space s;
    row_space_init(row, m, max_vpp, per_replica, &s);

    row_best best;
    memset(&best, 0, sizeof best);
    for (int ib = 0; ib < s.n_b; ib++)
        for (int iv = 0; iv < s.n_v; iv++)
            for (int r = s.r0; r <= s.r1; r++)
                for (int sp = s.sp0; sp <= s.sp1; sp++)
                    for (int z = s.z0; z <= s.z1; z++) {
                        int64_t b = s.bs[ib];
                        int v = s.vs[iv];
                        if (per_replica % b != 0)
                            continue;
                        int64_t mm = per_replica / b;
                        /* Megatron's interleaved schedule needs m divisible by p */
                        if (v > 1 && row->vpp <= 0 && mm % row->pp != 0)
                            continue;
                        row_candidate(row, m, &w->fw, b, mm, v, r, sp, z, &w->par);
                        row_try(w, m, limit, &best);
                    }
    row->n_searched = best.n_scored;
    if (!best.have) {
        snprintf(row->note, sizeof row->note, "no valid configuration: %.130s",
                 best.why ? best.why : "divisibility");
        row->refused = row->usable;
        return PX_OK;
    }
    row_record(row, &w->ctx, &best.pred, &w->best_par, best.fits, limit);
    return PX_OK;
}

static void stat_add(px_val_stat *s, const char *id, double err)
{
    double a = fabs(err);
    s->mean_abs = (s->mean_abs * s->n + a) / (s->n + 1);
    s->n++;
    if (a > s->worst_abs || s->n == 1) {
        s->worst_abs = a;
        snprintf(s->worst_id, sizeof s->worst_id, "%s", id);
    }
}

/* The time a row's measurement stands for, for ratios: step, layer, or
 * (equal model FLOPs per step) the inverse of an MFU-convention TFLOP/s. */
static bool ratio_time(const px_val_row *r, int kind, double *meas, double *pred)
{
    switch (kind) {
    case 0:
        if (r->meas_step_s <= 0)
            return false;
        *meas = r->meas_step_s;
        *pred = r->pred.time.step_s;
        return true;
    case 1:
        if (r->meas_layer_fwd_s <= 0)
            return false;
        *meas = r->meas_layer_fwd_s + r->meas_layer_bwd_s;
        *pred = r->pred_layer_fwd_s + r->pred_layer_bwd_s;
        return true;
    default:
        if (r->meas_tflops <= 0 || r->conv != PX_VAL_CONV_MODEL)
            return false;
        *meas = 1.0 / r->meas_tflops;
        *pred = 1.0 / r->pred_tflops;
        return true;
    }
}

static void find_ratios(px_val_report *rep)
{
    rep->n_ratios = 0;
    rep->worst_ratio_err = 0.0;
    for (int i = 0; i < rep->n_rows; i++) {
        const px_val_row *f = &rep->rows[i];
        if (!f->evaluated || f->recompute != PX_RECOMPUTE_FULL)
            continue;
        int best = -1;
        for (int j = 0; j < rep->n_rows; j++) {
            const px_val_row *s = &rep->rows[j];
            if (!s->evaluated || s->recompute != PX_RECOMPUTE_SELECTIVE ||
                strcmp(s->group, f->group) != 0 || s->model.hidden != f->model.hidden ||
                s->model.n_layers != f->model.n_layers || s->gpus != f->gpus ||
                s->tp != f->tp || s->pp != f->pp || s->micro_batch != f->micro_batch)
                continue;
            if (best < 0 || (s->sp == f->sp && rep->rows[best].sp != f->sp))
                best = j;
        }
        if (best < 0 || rep->n_ratios >= PX_VALIDATE_MAX_RATIOS)
            continue;
        const px_val_row *s = &rep->rows[best];
        for (int kind = 0; kind < 3; kind++) {
            double mf, pf, ms, ps;
            if (!ratio_time(f, kind, &mf, &pf) || !ratio_time(s, kind, &ms, &ps))
                continue;
            px_val_ratio *q = &rep->ratios[rep->n_ratios++];
            q->full_row = i;
            q->sel_row = best;
            q->meas_ratio = mf / ms;
            q->pred_ratio = pf / ps;
            q->err = q->pred_ratio / q->meas_ratio - 1.0;
            if (fabs(q->err) > rep->worst_ratio_err)
                rep->worst_ratio_err = fabs(q->err);
            break;
        }
    }
}

static void family_add(px_val_family *f, const px_val_row *row)
{
    f->n_usable++;
    if (row->fam_on == 0) {
        f->n_refused++;
        return;
    }
    double a = fabs(row->fam_err);
    f->mean_abs = (f->mean_abs * f->n_pred + a) / (f->n_pred + 1);
    f->bias = (f->bias * f->n_pred + row->fam_err) / (f->n_pred + 1);
    f->n_pred++;
    if (a > f->worst_abs || f->n_pred == 1) {
        f->worst_abs = a;
        snprintf(f->worst_id, sizeof f->worst_id, "%s", row->id);
    }
}

/* Families of the usable rows; all_usable holds the bf16 / fp16 ones (the
 * formats the cost model runs).  A usable row without a prediction counts as
 * refused (its note says why). */
static px_status families(px_val_report *rep, px_error *err)
{
    rep->n_families = 0;
    memset(&rep->all_usable, 0, sizeof rep->all_usable);
    snprintf(rep->all_usable.name, sizeof rep->all_usable.name, "all bf16/fp16");
    memset(&rep->all_lowp_moe, 0, sizeof rep->all_lowp_moe);
    snprintf(rep->all_lowp_moe.name, sizeof rep->all_lowp_moe.name, "all fp8 or moe");
    for (int i = 0; i < rep->n_rows; i++) {
        px_val_row *row = &rep->rows[i];
        if (!row->usable)
            continue;
        if (row->fam_on == 0)
            row->refused = true;
        int g = 0;
        while (g < rep->n_families && strcmp(rep->families[g].name, row->family) != 0)
            g++;
        if (g == rep->n_families) {
            if (rep->n_families >= PX_VALIDATE_MAX_FAMILIES)
                return PX_FAIL(err, PX_ERR_INVALID, "more than %d families in %s",
                               PX_VALIDATE_MAX_FAMILIES, rep->path);
            memset(&rep->families[g], 0, sizeof rep->families[g]);
            snprintf(rep->families[g].name, sizeof rep->families[g].name, "%s", row->family);
            rep->n_families++;
        }
        family_add(&rep->families[g], row);
        if (row->precision == PX_PREC_BF16 || row->precision == PX_PREC_FP16)
            family_add(&rep->all_usable, row);
        if ((row->precision != PX_PREC_BF16 && row->precision != PX_PREC_FP16) || row->moe)
            family_add(&rep->all_lowp_moe, row);
    }
    return PX_OK;
}

/* Which families a bound covers: the bf16/fp16 families, or the fp8 and
 * MoE ones. */
static bool family_is_lowp_moe(const char *name)
{
    size_t n = strlen(name);
    return strstr(name, "/fp8/") || (n > 4 && !strcmp(name + n - 4, "/moe"));
}

/* The bounds on one set of rows (all, the total over them) and its
 * families (those with lowp_moe as asked); label names the set. */
static bool set_bounds(const px_val_report *r, const px_val_family *all, bool lowp_moe,
                       const char *label, double max_mean, double max_family,
                       double max_refused, char *why, int why_len)
{
    char dummy[8];
    if (!why) {
        why = dummy;
        why_len = (int)sizeof dummy;
    }
    why[0] = '\0';
    if (all->n_usable == 0 || all->n_pred == 0) {
        snprintf(why, (size_t)why_len, "no usable %s row was predicted", label);
        return false;
    }
    if (all->mean_abs > max_mean) {
        snprintf(why, (size_t)why_len, "%s: mean |error| %.1f%% over %d rows > %.1f%%", label,
                 100.0 * all->mean_abs, all->n_pred, 100.0 * max_mean);
        return false;
    }
    double refused = (double)all->n_refused / all->n_usable;
    if (refused > max_refused) {
        snprintf(why, (size_t)why_len, "%s: %d of %d usable rows refused (%.1f%% > %.1f%%)",
                 label, all->n_refused, all->n_usable, 100.0 * refused, 100.0 * max_refused);
        return false;
    }
    for (int g = 0; g < r->n_families; g++) {
        const px_val_family *f = &r->families[g];
        bool in_set = lowp_moe ? family_is_lowp_moe(f->name) : !strstr(f->name, "/fp8/");
        if (in_set && f->n_pred > 0 && f->mean_abs > max_family) {
            snprintf(why, (size_t)why_len, "family %s: mean |error| %.1f%% > %.1f%%", f->name,
                     100.0 * f->mean_abs, 100.0 * max_family);
            return false;
        }
    }
    return true;
}

bool px_validate_family_bounds(const px_val_report *r, double max_mean, double max_family,
                               double max_refused, char *why, int why_len)
{
    return set_bounds(r, &r->all_usable, false, "bf16/fp16", max_mean, max_family, max_refused,
                      why, why_len);
}

bool px_validate_lowp_moe_bounds(const px_val_report *r, double max_mean, double max_family,
                                 double max_refused, char *why, int why_len)
{
    return set_bounds(r, &r->all_lowp_moe, true, "fp8/MoE", max_mean, max_family, max_refused,
                      why, why_len);
}

/* Predicts every modelled row and adds its error to its group's and the
 * overall statistics. */
static px_status predict_rows(px_val_report *rep, px_val_work *w, px_error *err)
{
    const char *dir = rep->profiles_dir[0] ? rep->profiles_dir : NULL;
    for (int i = 0; i < rep->n_rows; i++) {
        px_val_row *row = &rep->rows[i];
        if (!row->modelled)
            continue; /* parse_row left a note */
        px_status st = predict_row(row, dir, rep->max_vpp, w, err);
        if (st != PX_OK)
            return st;
        if (!row->evaluated || row->on == PX_VAL_ON_NONE)
            continue;
        int g = 0;
        while (g < rep->n_groups && strcmp(rep->groups[g].name, row->group) != 0)
            g++;
        if (g == rep->n_groups) {
            if (rep->n_groups >= PX_VALIDATE_MAX_GROUPS)
                return PX_FAIL(err, PX_ERR_INVALID, "more than %d groups in %s",
                               PX_VALIDATE_MAX_GROUPS, rep->path);
            memset(&rep->groups[g], 0, sizeof rep->groups[g]);
            snprintf(rep->groups[g].name, sizeof rep->groups[g].name, "%s", row->group);
            rep->n_groups++;
        }
        stat_add(&rep->groups[g], row->id, row->err);
        if (row->on == PX_VAL_ON_TFLOPS)
            stat_add(&rep->overall_tflops, row->id, row->err);
        if (row->meas_step_s > 0 && row->err_step != 0.0)
            stat_add(&rep->overall_step, row->id, row->err_step);
    }
    return PX_OK;
}

px_status px_validate_run(px_val_report *rep, px_error *err)
{
    rep->n_groups = 0;
    memset(&rep->overall_tflops, 0, sizeof rep->overall_tflops);
    memset(&rep->overall_step, 0, sizeof rep->overall_step);
    snprintf(rep->overall_tflops.name, sizeof rep->overall_tflops.name, "all (TFLOP/s)");
    snprintf(rep->overall_step.name, sizeof rep->overall_step.name, "all (step time)");
    px_val_work *w = calloc(1, sizeof *w);
    if (!w)
        return PX_FAIL(err, PX_ERR_NOMEM, "validate: no memory for the cost context");
    px_status st = predict_rows(rep, w, err);
    free(w);
    if (st != PX_OK)
        return st;
    find_ratios(rep);
    return families(rep, err);
}

px_status px_validate_file(const char *path, const char *profiles_dir, px_val_report *out,
                           px_error *err)
{
    px_status st = px_validate_load(path, profiles_dir, out, err);
    if (st != PX_OK)
        return st;
    st = px_validate_run(out, err);
    if (st != PX_OK)
        px_validate_free(out);
    return st;
}

bool px_validate_within_bounds(const px_val_report *r, char *why, int why_len)
{
    char dummy[8];
    if (!why) {
        why = dummy;
        why_len = (int)sizeof dummy;
    }
    why[0] = '\0';
    if (r->overall_tflops.n == 0) {
        snprintf(why, (size_t)why_len, "no row with a measured throughput was evaluated");
        return false;
    }
    if (r->overall_tflops.mean_abs > PX_VALIDATE_MAX_MAE) {
        snprintf(why, (size_t)why_len,
                 "throughput mean absolute error %.1f%% over %d rows > %.0f%%",
                 100.0 * r->overall_tflops.mean_abs, r->overall_tflops.n,
                 100.0 * PX_VALIDATE_MAX_MAE);
        return false;
    }
    for (int g = 0; g < r->n_groups; g++)
        if (r->groups[g].mean_abs > PX_VALIDATE_MAX_GROUP_MAE) {
            snprintf(why, (size_t)why_len, "group %s: mean absolute error %.1f%% > %.0f%%",
                     r->groups[g].name, 100.0 * r->groups[g].mean_abs,
                     100.0 * PX_VALIDATE_MAX_GROUP_MAE);
            return false;
        }
    for (int i = 0; i < r->n_ratios; i++)
        if (fabs(r->ratios[i].err) > PX_VALIDATE_MAX_RATIO_ERR) {
            snprintf(why, (size_t)why_len,
                     "full/selective ratio of %s: predicted %.3f vs measured %.3f (%+.1f%%, "
                     "bound %.0f%%)",
                     r->rows[r->ratios[i].full_row].id, r->ratios[i].pred_ratio,
                     r->ratios[i].meas_ratio, 100.0 * r->ratios[i].err,
                     100.0 * PX_VALIDATE_MAX_RATIO_ERR);
            return false;
        }
    return true;
}

/* ------------------------------------------------------------------ */
/* Output                                                              */

static void fmt_opt(char *buf, size_t n, double v, const char *fmt)
{
    if (v > 0)
        snprintf(buf, n, fmt, v);
    else
        snprintf(buf, n, "n/a");
}

static void fmt_pct(char *buf, size_t n, bool have, double e)
{
    if (have)
        snprintf(buf, n, "%+.1f", 100.0 * e);
    else
        snprintf(buf, n, "n/a");
}

/* The families of the usable rows and the refused rows with the reason. */
static void write_families(const px_val_report *r, FILE *out)
{
    if (r->n_families == 0)
        return;
    fprintf(out, "\n# families (id prefix / framework / GPU / precision / dense|moe) of the "
                 "usable rows: tokens/s per GPU, else MFU, else step time; err = pred/meas - 1 "
                 "(step: meas/pred - 1), + = predicted too fast\n");
    fprintf(out, "%-44s %6s %6s %7s %8s %8s %8s  %s\n", "family", "usable", "pred", "refused",
            "mean|e|%", "bias%", "worst%", "worst row");
    for (int g = 0; g <= r->n_families + 1; g++) {
        const px_val_family *f = g < r->n_families    ? &r->families[g]
                                 : g == r->n_families ? &r->all_usable
                                                      : &r->all_lowp_moe;
        fprintf(out, "%-44.44s %6d %6d %7d %8.1f %+8.1f %8.1f  %s\n", f->name, f->n_usable,
                f->n_pred, f->n_refused, 100.0 * f->mean_abs, 100.0 * f->bias,
                100.0 * f->worst_abs, f->n_pred ? f->worst_id : "-");
    }
    bool any = false;
    for (int i = 0; i < r->n_rows; i++) {
        const px_val_row *w = &r->rows[i];
        if (!w->usable || !w->refused)
            continue;
        if (!any)
            fprintf(out, "\n# refused usable rows and the planner's reason\n");
        any = true;
        fprintf(out, "%-48.48s %s\n", w->id, w->note);
    }
}

void px_validate_write_table(const px_val_report *r, FILE *out)
{
    fprintf(out, "# validate: %s, %d rows\n", r->path, r->n_rows);
    fprintf(out, "# conv: HFU = hardware FLOPs (recomputed forward counted), MFU = model FLOPs;"
                 " err = pred/meas - 1\n");
    fprintf(out, "# searched (when unpublished): micro-batch b, vpp, recompute, sp, zero 0/1;"
                 " '!' = predicted not to fit in HBM\n");
    fprintf(out, "%-40s %5s %2s %2s %3s %4s %3s %4s %2s %2s %4s %8s %8s %7s %6s %6s %8s %8s %7s\n",
                 "id", "gpus", "tp", "pp", "vpp", "dp", "b", "rc", "sp", "z", "conv", "meas_TF",
                 "pred_TF", "err%", "m_mfu", "p_mfu", "meas_s", "pred_s", "s_err%");
    for (int i = 0; i < r->n_rows; i++) {
        const px_val_row *w = &r->rows[i];
        if (!w->evaluated) {
            fprintf(out, "%-40.40s not evaluated: %s\n", w->id, w->note);
            continue;
        }
        const px_parallel *p = &w->par;
        char mtf[16], mmfu[16], mst[16], e1[16], e2[16];
        fmt_opt(mtf, sizeof mtf, w->meas_tflops, "%.1f");
        fmt_opt(mmfu, sizeof mmfu, w->meas_mfu, "%.3f");
        fmt_opt(mst, sizeof mst, w->meas_step_s, "%.2f");
        fmt_pct(e1, sizeof e1, w->on == PX_VAL_ON_TFLOPS, w->err);
        fmt_pct(e2, sizeof e2, w->meas_step_s > 0 && w->err_step != 0.0, w->err_step);
        static const char *const rc[] = {"none", "sel", "full"};
        fprintf(out,
                "%-40.40s %5d %2d %2d %3d %4d %3lld %4s %2d %2d %4s %8s %8.1f %7s %6s %6.3f %8s "
                "%8.2f %7s%s\n",
                w->id, w->gpus, p->tp, p->pp, p->vpp, p->dp, (long long)p->micro_batch,
                rc[p->recompute], p->sp ? 1 : 0, p->zero,
                w->conv == PX_VAL_CONV_HW ? "HFU" : "MFU", mtf, w->pred_tflops, e1, mmfu,
                w->pred.mfu, mst, w->pred.time.step_s, e2, w->fits ? "" : " !");
    }

    bool any_layer = false;
    for (int i = 0; i < r->n_rows; i++)
        any_layer |= r->rows[i].evaluated && r->rows[i].meas_layer_fwd_s > 0;
    if (any_layer) {
        fprintf(out, "\n# one transformer layer, one micro-batch (ms)\n");
        fprintf(out, "%-40s %8s %8s %8s %8s %8s %8s %7s\n", "id", "m_fwd", "p_fwd", "m_bwd",
                "p_bwd", "m_total", "p_total", "err%");
        for (int i = 0; i < r->n_rows; i++) {
            const px_val_row *w = &r->rows[i];
            if (!w->evaluated || w->meas_layer_fwd_s <= 0)
                continue;
            double mt = w->meas_layer_fwd_s + w->meas_layer_bwd_s,
                   pt = w->pred_layer_fwd_s + w->pred_layer_bwd_s;
            fprintf(out, "%-40.40s %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %+7.1f\n", w->id,
                    1e3 * w->meas_layer_fwd_s, 1e3 * w->pred_layer_fwd_s,
                    1e3 * w->meas_layer_bwd_s, 1e3 * w->pred_layer_bwd_s, 1e3 * mt, 1e3 * pt,
                    100.0 * (pt / mt - 1.0));
        }
    }
    if (r->n_ratios > 0) {
        fprintf(out, "\n# full / selective recompute time ratios (bound %.0f%%)\n",
                100.0 * PX_VALIDATE_MAX_RATIO_ERR);
        fprintf(out, "%-40s %-40s %7s %7s %7s\n", "full", "selective", "meas", "pred", "err%");
        for (int i = 0; i < r->n_ratios; i++) {
            const px_val_ratio *q = &r->ratios[i];
            fprintf(out, "%-40.40s %-40.40s %7.3f %7.3f %+7.1f\n", r->rows[q->full_row].id,
                    r->rows[q->sel_row].id, q->meas_ratio, q->pred_ratio, 100.0 * q->err);
        }
    }
    fprintf(out, "\n# mean and worst absolute error by group (primary metric: TFLOP/s, else step"
                 " time, else layer time)\n");
    fprintf(out, "%-28s %4s %8s %8s  %s\n", "group", "n", "mean%", "worst%", "worst row");
    for (int g = 0; g < r->n_groups; g++) {
        const px_val_stat *s = &r->groups[g];
        fprintf(out, "%-28.28s %4d %8.1f %8.1f  %s\n", s->name, s->n, 100.0 * s->mean_abs,
                100.0 * s->worst_abs, s->worst_id);
    }
    const px_val_stat *all[2] = {&r->overall_tflops, &r->overall_step};
    for (int k = 0; k < 2; k++)
        fprintf(out, "%-28.28s %4d %8.1f %8.1f  %s\n", all[k]->name, all[k]->n,
                100.0 * all[k]->mean_abs, 100.0 * all[k]->worst_abs, all[k]->worst_id);
    write_families(r, out);
    char why[256];
    bool ok = px_validate_within_bounds(r, why, sizeof why);
    fprintf(out, "# bounds (throughput MAE <= %.0f%%, group MAE <= %.0f%%, ratios <= %.0f%%): %s%s%s\n",
            100.0 * PX_VALIDATE_MAX_MAE, 100.0 * PX_VALIDATE_MAX_GROUP_MAE,
            100.0 * PX_VALIDATE_MAX_RATIO_ERR, ok ? "pass" : "FAIL", ok ? "" : ": ",
            ok ? "" : why);
}

px_status px_validate_explain(const px_val_report *r, const char *id, FILE *out, px_error *err)
{
    const px_val_row *w = NULL;
    for (int i = 0; i < r->n_rows && !w; i++)
        if (strcmp(r->rows[i].id, id) == 0)
            w = &r->rows[i];
    if (!w || !w->evaluated)
        return PX_FAIL(err, PX_ERR_NOT_FOUND, "row \"%s\": %s", id,
                       w ? "not evaluated" : "no such id in the file");
    px_val_work *work = calloc(1, sizeof *work);
    if (!work)
        return PX_FAIL(err, PX_ERR_NOMEM, "validate: no memory for the cost context");
    px_hw hw;
    px_prediction p;
    px_cost_detail d;
    px_status st = row_context(w, r->profiles_dir[0] ? r->profiles_dir : NULL, work, &hw, err);
    if (st == PX_OK)
        st = px_cost_eval(&work->ctx, &w->par, 0.0, 0.0, &p, &d, err);
    free(work);
    if (st != PX_OK)
        return st;
    const px_time *t = &p.time;
    fprintf(out, "# %s on %s: tp %d pp %d vpp %d cp %d ep %d etp %d dp %d, b %lld x m %lld, "
                 "recompute %s, sp %d, zero %d, flash %d\n",
            w->id, hw.name, w->par.tp, w->par.pp, w->par.vpp, w->par.cp, w->par.ep, w->par.etp,
            w->par.dp,
            (long long)w->par.micro_batch, (long long)w->par.n_micro,
            px_recompute_name(w->par.recompute), w->par.sp, w->par.zero,
            w->par.flash_attention);
    fprintf(out, "%-28s %12s %8s\n", "quantity", "seconds", "of step");
    struct {
        const char *name;
        double v;
    } q[] = {{"step", t->step_s},
             {"compute fwd", d.compute_fwd_s},
             {"compute bwd", d.compute_bwd_s},
             {"compute recompute", d.compute_recompute_s},
             {"  of which gemm", d.gemm_s},
             {"  of which attention core", d.attn_s},
             {"  of which memory-bound", d.membound_s},
             {"tp comm exposed", d.tp_exposed_s},
             {"cp comm exposed", d.cp_exposed_s},
             {"ep comm exposed", d.ep_exposed_s},
             {"pp comm exposed", d.pp_exposed_s},
             {"dp comm total", d.dp_total_s},
             {"dp comm exposed", d.dp_exposed_s},
             {"bubble", t->bubble_s},
             {"optimizer", t->optimizer_s},
             {"stage micro-batch", d.stage_mb_s}};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        fprintf(out, "%-28s %12.4f %7.1f%%\n", q[i].name, q[i].v,
                t->step_s > 0 ? 100.0 * q[i].v / t->step_s : 0.0);
    fprintf(out, "%-28s %12.2f GB\n", "memory per GPU", (double)p.mem.total / 1e9);
    const struct {
        const char *name;
        int64_t v;
    } mq[] = {{"  weights", p.mem.weights},         {"  gradients", p.mem.grads},
              {"  optimizer", p.mem.optimizer},     {"  activations", p.mem.activations},
              {"  buffers", p.mem.buffers}};
    for (size_t i = 0; i < sizeof mq / sizeof mq[0]; i++)
        fprintf(out, "%-28s %12.2f GB\n", mq[i].name, (double)mq[i].v / 1e9);
    fprintf(out, "%-28s %12.3f\n", "mfu", p.mfu);
    fprintf(out, "%-28s %12.3f\n", "hfu", p.hfu);
    return PX_OK;
}

static json_t *stat_json(const px_val_stat *s)
{
    return json_pack("{s:s, s:i, s:f, s:f, s:s}", "name", s->name, "n", s->n, "mean_abs_err",
                     s->mean_abs, "worst_abs_err", s->worst_abs, "worst_id", s->worst_id);
}

static json_t *num_or_null(double v)
{
    return v > 0 ? json_real(v) : json_null();
}

px_status px_validate_write_json(const px_val_report *r, FILE *out, px_error *err)
{
    json_t *root = json_object(), *rows = json_array(), *groups = json_array(),
           *ratios = json_array();
    if (!root || !rows || !groups || !ratios) {
        json_decref(root);
        json_decref(rows);
        json_decref(groups);
        json_decref(ratios);
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < r->n_rows; i++) {
        const px_val_row *w = &r->rows[i];
        json_t *o = json_pack("{s:s, s:s, s:b, s:s, s:s, s:s, s:b, s:b}", "id", w->id, "group",
                              w->group, "evaluated", w->evaluated, "note", w->note, "family",
                              w->family, "framework", w->framework, "usable", w->usable,
                              "refused", w->refused);
        if (w->fam_on)
            json_object_set_new(o, "family_err", json_real(w->fam_err));
        if (w->evaluated)
            json_object_set_new(o, "pred_tokens_per_s_per_gpu", json_real(w->pred_tok_gpu));
        json_object_set_new(o, "meas_tokens_per_s_per_gpu", num_or_null(w->meas_tok_gpu));
        if (w->evaluated) {
            const px_parallel *p = &w->par;
            json_object_set_new(o, "config",
                                json_pack("{s:i, s:i, s:i, s:i, s:I, s:I, s:s, s:b, s:i, s:b}",
                                          "tp", p->tp, "pp", p->pp, "vpp", p->vpp, "dp", p->dp,
                                          "micro_batch", (json_int_t)p->micro_batch,
                                          "n_micro", (json_int_t)p->n_micro, "recompute",
                                          px_recompute_name(p->recompute), "sp", p->sp, "zero",
                                          p->zero, "flash_attention", p->flash_attention));
            json_object_set_new(o, "conv",
                                json_string(w->conv == PX_VAL_CONV_HW ? "hfu" : "mfu"));
            json_object_set_new(o, "fits", json_boolean(w->fits));
            json_object_set_new(o, "meas_tflops", num_or_null(w->meas_tflops));
            json_object_set_new(o, "pred_tflops", json_real(w->pred_tflops));
            json_object_set_new(o, "meas_mfu", num_or_null(w->meas_mfu));
            json_object_set_new(o, "pred_mfu", json_real(w->pred.mfu));
            json_object_set_new(o, "pred_hfu", json_real(w->pred.hfu));
            json_object_set_new(o, "meas_step_s", num_or_null(w->meas_step_s));
            json_object_set_new(o, "pred_step_s", json_real(w->pred.time.step_s));
            json_object_set_new(o, "meas_layer_fwd_s", num_or_null(w->meas_layer_fwd_s));
            json_object_set_new(o, "meas_layer_bwd_s", num_or_null(w->meas_layer_bwd_s));
            json_object_set_new(o, "pred_layer_fwd_s", json_real(w->pred_layer_fwd_s));
            json_object_set_new(o, "pred_layer_bwd_s", json_real(w->pred_layer_bwd_s));
            json_object_set_new(o, "err", w->on != PX_VAL_ON_NONE ? json_real(w->err) : json_null());
        }
        json_array_append_new(rows, o);
    }
    for (int g = 0; g < r->n_groups; g++)
        json_array_append_new(groups, stat_json(&r->groups[g]));
    for (int i = 0; i < r->n_ratios; i++) {
        const px_val_ratio *q = &r->ratios[i];
        json_array_append_new(ratios,
                              json_pack("{s:s, s:s, s:f, s:f, s:f}", "full",
                                        r->rows[q->full_row].id, "selective",
                                        r->rows[q->sel_row].id, "meas_ratio", q->meas_ratio,
                                        "pred_ratio", q->pred_ratio, "err", q->err));
    }
    json_object_set_new(root, "file", json_string(r->path));
    json_object_set_new(root, "rows", rows);
    json_object_set_new(root, "groups", groups);
    json_object_set_new(root, "ratios", ratios);
    json_object_set_new(root, "overall_tflops", stat_json(&r->overall_tflops));
    json_object_set_new(root, "overall_step", stat_json(&r->overall_step));
    json_object_set_new(root, "within_bounds", json_boolean(px_validate_within_bounds(r, NULL, 0)));
    json_t *fams = json_array();
    for (int g = 0; g <= r->n_families + 1; g++) {
        const px_val_family *f = g < r->n_families    ? &r->families[g]
                                 : g == r->n_families ? &r->all_usable
                                                      : &r->all_lowp_moe;
        json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:f, s:f, s:f, s:s}", "name", f->name,
                              "usable", f->n_usable, "predicted", f->n_pred, "refused",
                              f->n_refused, "mean_abs_err", f->mean_abs, "bias", f->bias,
                              "worst_abs_err", f->worst_abs, "worst_id", f->worst_id);
        if (g < r->n_families)
            json_array_append_new(fams, o);
        else
            json_object_set_new(root, g == r->n_families ? "all_usable" : "all_lowp_moe", o);
    }
    json_object_set_new(root, "families", fams);
    int rc = json_dumpf(root, out, JSON_SORT_KEYS | JSON_INDENT(1) | JSON_REAL_PRECISION(6));
    json_decref(root);
    if (rc != 0)
        return PX_FAIL(err, PX_ERR_IO, "could not write the JSON report");
    fputc('\n', out);
    return PX_OK;
}

#define PX_VALIDATE_REL_SHARED "/../shared/data/published-megatron.json"
#define PX_VALIDATE_REL_COPY "/tests/validate/data/published-megatron.json"

void px_validate_default_path(char *buf, int buf_len)
{
    const char *env = getenv("PARALLAX_SOURCE_ROOT");
    const char *roots[2] = {env && env[0] ? env : NULL, PX_SOURCE_ROOT};
    const char *rels[2] = {PX_VALIDATE_REL_SHARED, PX_VALIDATE_REL_COPY};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 2; i++) {
            if (!roots[i])
                continue;
            snprintf(buf, (size_t)buf_len, "%s%s", roots[i], rels[k]);
            if (access(buf, R_OK) == 0)
                return;
        }
    snprintf(buf, (size_t)buf_len, "%s%s", roots[0] ? roots[0] : PX_SOURCE_ROOT,
             PX_VALIDATE_REL_COPY);
}
