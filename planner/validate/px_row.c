/* px_row.c — a published-runs row as the `plan` call of
 * shared/data/README.md; see px_row.h. */
#include "px_row.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_jfield.h"
#include "px_plan_json.h"
#include "px_search_plan.h"

/* ---- reading a row's fields ---- */

static const char *jstr(const json_t *o, const char *key)
{
    json_t *v = o ? json_object_get(o, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* A number, 0 when absent, null or not a number (the README's "not
 * published"; Python's falsy). */
static double jnum(const json_t *o, const char *key)
{
    json_t *v = o ? json_object_get(o, key) : NULL;
    return json_is_number(v) ? json_number_value(v) : 0.0;
}

static int64_t jint(const json_t *o, const char *key)
{
    return (int64_t)llround(jnum(o, key));
}

/* s (lower-cased copy of at most n - 1 characters) into buf */
static void lower(const char *s, char *buf, size_t n)
{
    size_t i = 0;
    for (; s && s[i] && i + 1 < n; i++)
        buf[i] = (char)tolower((unsigned char)s[i]);
    buf[i] = '\0';
}

static bool starts(const char *s, const char *prefix)
{
    return !strncmp(s, prefix, strlen(prefix));
}

/* ---- the README's name mappings ---- */

px_precision px_row_precision(const char *precision)
{
    char p[256];
    lower(precision, p, sizeof p);
    if (starts(p, "bf16") || starts(p, "amp_bf16") || starts(p, "fp16/bf16"))
        return PX_PREC_BF16;
    if (strstr(p, "nvfp4"))
        return PX_PREC_NVFP4;
    if (strstr(p, "mxfp8") || strstr(p, "fp8-mx"))
        return PX_PREC_MXFP8;
    if (strstr(p, "fp8-cs"))
        return PX_PREC_FP8_CS;
    if (strstr(p, "rowwise"))
        return PX_PREC_FP8_ROWWISE;
    if (strstr(p, "alt. granularity") || strstr(p, "fine-grained"))
        return PX_PREC_FP8_BLOCK;
    if (strstr(p, "fp8") || strstr(p, "float8"))
        return PX_PREC_FP8;
    if (starts(p, "fp16") && !strstr(p, "bf16"))
        return PX_PREC_FP16;
    return PX_PREC_BF16;
}

const char *px_row_framework(const char *framework)
{
    char f[256];
    lower(framework, f, sizeof f);
    if (strstr(f, "torchtitan") || strstr(f, "automodel"))
        return "torchtitan";
    if (strstr(f, "foundry") || strstr(f, "metaseq") || strstr(f, "pytorch fsdp"))
        return "llm-foundry";
    if (strstr(f, "maxtext") || strstr(f, "paxml"))
        return "maxtext";
    if (strstr(f, "deepspeed") && (!strstr(f, "megatron") || strstr(f, "zero-3")))
        return "deepspeed";
    return "megatron";
}

void px_row_release(const char *framework, char *buf, size_t buf_len)
{
    buf[0] = '\0';
    if (!framework)
        return;
    for (const char *p = strstr(framework, "NeMo "); p; p = strstr(p + 1, "NeMo ")) {
        const char *d = p + 5;
        if (isdigit((unsigned char)d[0]) && isdigit((unsigned char)d[1]) && d[2] == '.' &&
            isdigit((unsigned char)d[3]) && isdigit((unsigned char)d[4])) {
            snprintf(buf, buf_len, "nemo-%.2s.%.2s", d, d + 3);
            return;
        }
    }
    /* the first 19xx / 20xx not inside a longer number */
    for (const char *p = framework; p[0] && p[1] && p[2] && p[3]; p++) {
        bool century = (p[0] == '1' && p[1] == '9') || (p[0] == '2' && p[1] == '0');
        if (century && isdigit((unsigned char)p[2]) && isdigit((unsigned char)p[3]) &&
            (p == framework || !isdigit((unsigned char)p[-1])) &&
            !isdigit((unsigned char)p[4])) {
            snprintf(buf, buf_len, "%.4s", p);
            return;
        }
    }
}

const char *px_row_hw_name(const char *gpu, double mem_gb)
{
    static const struct {
        const char *gpu, *profile;
    } map[] = {{"V100", "v100"},   {"A100", "a100-80g"}, {"A800", "a100-80g"},
               {"H100", "h100-sxm"}, {"H200", "h200"},   {"H800", "h800"},
               {"B200", "b200"},   {"B300", "b300"},     {"GB200", "gb200-nvl72"},
               {"GB300", "gb300-nvl72"}};
    if (!gpu)
        return NULL;
    if (!strcmp(gpu, "A100") && mem_gb == 40.0)
        return "a100-40g";
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(gpu, map[i].gpu))
            return map[i].profile;
    return NULL;
}

/* ---- usable rows ---- */

/* What keeps a row from the README's plan call ("" when nothing does);
 * need_measured: also a compared quantity (the README's usable rows). */
static const char *row_missing(const json_t *row, bool need_measured)
{
    const json_t *jh = json_object_get(row, "hardware"), *jp = json_object_get(row, "parallel"),
                 *jm = json_object_get(row, "model"), *je = json_object_get(row, "measured");
    if (!px_row_hw_name(jstr(jh, "gpu"), 0.0))
        return "hardware.gpu: no hardware profile for this GPU";
    if (!jint(jp, "tp") || !jint(jp, "pp") || !jint(jp, "dp"))
        return "parallel: tp, pp and dp are not all published";
    if (!jint(jm, "layers"))
        return "model.layers: not published";
    if (need_measured && !jnum(je, "tokens_per_sec_per_gpu") && !jnum(je, "mfu") &&
        !jnum(je, "step_time_s"))
        return "measured: no tokens/s per GPU, MFU or step time";
    return "";
}

bool px_row_usable(const json_t *row, char *why, size_t why_len)
{
    const char *miss = json_is_object(row) ? row_missing(row, true) : "expected an object";
    if (miss[0] && why)
        snprintf(why, why_len, "%s", miss);
    return !miss[0];
}

/* ---- the model: a Hugging Face style config ---- */

static void set_int(json_t *o, const char *key, int64_t v)
{
    json_object_set_new(o, key, json_integer((json_int_t)v));
}

/* "vocab_size": the row's, else the default (null for none). */
static void set_vocab(json_t *c, const json_t *jm, int64_t dflt, bool *vocab_default)
{
    int64_t v = jint(jm, "vocab");
    if (!v && vocab_default)
        *vocab_default = true;
    json_object_set_new(c, "vocab_size", v ? json_integer((json_int_t)v)
                                           : dflt ? json_integer((json_int_t)dflt)
                                                  : json_null());
}

static json_t *moe_config(const json_t *jm, const json_t *moe, const char *notes,
                          bool *vocab_default)
{
    int64_t layers = jint(jm, "layers"), hidden = jint(jm, "hidden"), heads = jint(jm, "heads");
    int64_t kv = jint(jm, "kv_heads"), expert_ffn = jint(moe, "expert_ffn");
    json_t *c = json_object();
    set_int(c, "hidden_size", hidden);
    set_int(c, "num_hidden_layers", layers);
    set_int(c, "num_attention_heads", heads);
    set_int(c, "num_key_value_heads", kv ? kv : heads);
    set_vocab(c, jm, PX_ROW_VOCAB_MOE, vocab_default);
    set_int(c, "max_position_embeddings", jint(jm, "seq_len"));
    json_object_set_new(c, "hidden_act", json_string("silu"));
    json_object_set_new(c, "tie_word_embeddings", json_false());
    set_int(c, "num_experts_per_tok", jint(moe, "top_k"));
    set_int(c, "moe_intermediate_size", expert_ffn);
    int64_t ffn = jint(jm, "ffn");
    set_int(c, "intermediate_size", ffn ? ffn : expert_ffn);
    int64_t moe_layers = jint(moe, "moe_layers");
    if (strstr(notes, "mla")) {
        /* DeepSeek-V3's attention and dense MLP (its config.json) */
        json_object_set_new(c, "model_type", json_string("deepseek_v3"));
        set_int(c, "n_routed_experts", jint(moe, "experts"));
        set_int(c, "n_shared_experts", jint(moe, "shared_experts"));
        set_int(c, "first_k_dense_replace", layers - (moe_layers ? moe_layers : layers));
        set_int(c, "moe_layer_freq", 1);
        set_int(c, "q_lora_rank", 1536);
        set_int(c, "kv_lora_rank", 512);
        set_int(c, "qk_nope_head_dim", 128);
        set_int(c, "qk_rope_head_dim", 64);
        set_int(c, "v_head_dim", 128);
        set_int(c, "intermediate_size", 18432);
    } else {
        json_object_set_new(c, "model_type", json_string("qwen3_moe"));
        set_int(c, "num_experts", jint(moe, "experts"));
        set_int(c, "head_dim", heads ? hidden / heads : 0);
    }
    return c;
}

static json_t *dense_config(const json_t *jm, const char *notes, bool *vocab_default)
{
    int64_t hidden = jint(jm, "hidden"), ffn = jint(jm, "ffn"), heads = jint(jm, "heads");
    int64_t kv = jint(jm, "kv_heads");
    bool gated = strstr(notes, "swiglu") || strstr(notes, "gated") ||
                 (ffn && ffn != 4 * hidden && !strstr(notes, "gelu"));
    json_t *c = json_object();
    if (gated) {
        json_object_set_new(c, "model_type", json_string("llama"));
        set_int(c, "hidden_size", hidden);
        set_int(c, "intermediate_size", ffn);
        set_int(c, "num_hidden_layers", jint(jm, "layers"));
        set_int(c, "num_attention_heads", heads);
        set_int(c, "num_key_value_heads", kv ? kv : heads);
        set_vocab(c, jm, 0, vocab_default);
        set_int(c, "max_position_embeddings", jint(jm, "seq_len"));
        json_object_set_new(c, "hidden_act", json_string("silu"));
        json_object_set_new(c, "tie_word_embeddings", json_false());
        return c;
    }
    json_object_set_new(c, "model_type", json_string("gpt2"));
    set_int(c, "n_embd", hidden);
    set_int(c, "n_inner", ffn ? ffn : 4 * hidden);
    set_int(c, "n_layer", jint(jm, "layers"));
    set_int(c, "n_head", heads);
    set_vocab(c, jm, PX_ROW_VOCAB_GPT2, vocab_default);
    set_int(c, "n_positions", jint(jm, "seq_len"));
    json_object_set_new(c, "activation_function", json_string("gelu_new"));
    return c;
}

json_t *px_row_hf_config(const json_t *jm, bool *vocab_default)
{
    if (!json_is_object(jm))
        return NULL;
    if (vocab_default)
        *vocab_default = false;
    char notes[512];
    lower(jstr(jm, "arch_notes"), notes, sizeof notes);
    const json_t *moe = json_object_get(jm, "moe");
    json_t *c = json_is_object(moe) ? moe_config(jm, moe, notes, vocab_default)
                                    : dense_config(jm, notes, vocab_default);
    /* the first "head_dim N" (MLA's widths are DeepSeek-V3's own) */
    const char *hd = strstr(notes, "head_dim ");
    while (hd && !isdigit((unsigned char)hd[9]))
        hd = strstr(hd + 1, "head_dim ");
    if (hd && strcmp(jstr(c, "model_type"), "deepseek_v3") != 0)
        set_int(c, "head_dim", strtoll(hd + 9, NULL, 10));
    return c;
}

/* ---- the hardware profile ---- */

/* Lays the row's memory and node size over a profile object where they
 * differ (README): memory by more than 2 GB; a node size other than the
 * profile's, unless it is the host size inside a larger NVLink domain
 * (gpus_per_host: the trays of an NVL72 rack) or more than the row's GPUs.
 * True when it changed something. */
static bool adjust_profile(json_t *prof, double mem_gb, int64_t gpn, int gpus)
{
    bool changed = false;
    json_t *hbm = json_object_get(prof, "hbm_bytes");
    if (mem_gb > 0 && hbm && fabs(json_number_value(hbm) - mem_gb * 1e9) > 2e9) {
        set_int(prof, "hbm_bytes", (int64_t)(mem_gb * 1e9));
        changed = true;
    }
    json_t *host = json_object_get(prof, "gpus_per_host");
    if (gpn && host && json_is_number(host) && json_number_value(host) == (double)gpn)
        gpn = 0;
    json_t *node = json_object_get(prof, "gpus_per_node");
    if (gpn && node && json_number_value(node) != (double)gpn && gpus >= gpn) {
        set_int(prof, "gpus_per_node", gpn);
        changed = true;
    }
    return changed;
}

/* The named profile, as a copy with the row's memory and node size where
 * they differ. */
static px_status row_hw(const json_t *jh, const char *profiles_dir, px_row_call *out,
                        px_error *err)
{
    const char *dir = profiles_dir ? profiles_dir : px_hw_profiles_dir_default();
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.json", dir, out->hw_name);
    json_t *prof = NULL;
    px_status st = px_jf_load_file(path, &prof, err);
    if (st != PX_OK)
        return st;
    out->row_memory_gb = jnum(jh, "gpu_memory_gb");
    out->row_gpus_per_node = (int)jint(jh, "gpus_per_node");
    out->hw_derived = adjust_profile(prof, out->row_memory_gb, out->row_gpus_per_node, out->gpus);
    st = px_hw_from_json(prof, path, "", &out->hw, err);
    json_decref(prof);
    return st;
}

px_status px_row_hw_for(const px_row_call *call, const px_hw *base, px_hw *out, px_error *err)
{
    json_t *prof = NULL;
    px_status st = px_hw_to_json(base, &prof, err);
    if (st != PX_OK)
        return st;
    adjust_profile(prof, call->row_memory_gb, call->row_gpus_per_node, call->gpus);
    px_hw copy;
    st = px_hw_from_json(prof, base->name, "", &copy, err);
    json_decref(prof);
    if (st == PX_OK)
        *out = copy;
    return st;
}

/* ---- the layout and the compared quantity ---- */

static void row_layout(const json_t *jp, px_row_call *out)
{
    out->tp = (int)jint(jp, "tp");
    out->pp = (int)jint(jp, "pp");
    out->dp = (int)jint(jp, "dp");
    out->cp = (int)jint(jp, "cp");
    out->vpp = (int)jint(jp, "vpp");
    out->ep = (int)jint(jp, "ep");
    out->micro_batch = jint(jp, "micro_batch");
    out->global_batch = jint(jp, "global_batch");
    /* fsdp true or a number means ZeRO-3 unless zero_stage says; a number
     * between 1 and dp is the shard group of hybrid sharding */
    json_t *fsdp = json_object_get(jp, "fsdp"), *zero = json_object_get(jp, "zero_stage");
    bool fsdp_on = json_is_true(fsdp) || (json_is_number(fsdp) && json_number_value(fsdp) != 0);
    out->zero = json_is_number(zero) ? (int)jint(jp, "zero_stage") : fsdp_on ? 3 : -1;
    out->shard_group = 0;
    if (json_is_integer(fsdp) && json_integer_value(fsdp) > 1 &&
        json_integer_value(fsdp) < out->dp)
        out->shard_group = (int)json_integer_value(fsdp);
    char rc[64];
    lower(jstr(jp, "recompute"), rc, sizeof rc);
    out->recompute = starts(rc, "full")        ? PX_RECOMPUTE_FULL
                     : starts(rc, "selective") ? PX_RECOMPUTE_SELECTIVE
                                               : -1;
}

static void row_measured(const json_t *je, px_row_call *out)
{
    double tok = jnum(je, "tokens_per_sec_per_gpu"), mfu = jnum(je, "mfu");
    double step = jnum(je, "step_time_s");
    out->on = tok ? PX_ROW_ON_TOKENS : mfu ? PX_ROW_ON_MFU : step ? PX_ROW_ON_STEP : PX_ROW_ON_NONE;
    out->measured = tok ? tok : mfu ? mfu : step;
}

static void add_note(px_row_call *c, const char *text)
{
    size_t n = strlen(c->note);
    snprintf(c->note + n, sizeof c->note - n, "%s%s", n ? "; " : "", text);
}

/* "lora" when the id or notes name LoRA, "full" for SFT (whole words). */
static void row_finetune(const json_t *row, px_row_call *out)
{
    char t[2048];
    snprintf(t, sizeof t, "%s %s", out->id, jstr(row, "notes") ? jstr(row, "notes") : "");
    lower(t, t, sizeof t);
    static const struct {
        const char *word, *mode;
    } words[] = {{"lora", "lora"}, {"sft", "full"}};
    out->finetune[0] = '\0';
    for (size_t w = 0; w < 2 && !out->finetune[0]; w++) {
        size_t n = strlen(words[w].word);
        for (const char *p = strstr(t, words[w].word); p; p = strstr(p + 1, words[w].word)) {
            bool left = p == t || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
            bool right = !(isalnum((unsigned char)p[n]) || p[n] == '_');
            if (left && right) {
                snprintf(out->finetune, sizeof out->finetune, "%s", words[w].mode);
                break;
            }
        }
    }
}

static px_status row_model(const json_t *row, px_row_call *out, px_error *err)
{
    const json_t *jm = json_object_get(row, "model");
    json_t *cfg = px_row_hf_config(jm, &out->vocab_default);
    if (!cfg)
        return px_error_set(err, PX_ERR_INVALID, NULL, 0, 0, "row %s: model: expected an object",
                            out->id);
    char label[128];
    snprintf(label, sizeof label, "%s.json", out->id);
    for (char *p = label; *p; p++)
        if (*p == '/')
            *p = '_';
    px_status st = px_model_from_any_json(cfg, label, &out->model, err);
    json_decref(cfg);
    return st;
}

px_status px_row_map(const json_t *row, const char *profiles_dir, px_row_call *out,
                     px_error *err)
{
    memset(out, 0, sizeof *out);
    const char *id = jstr(row, "id");
    snprintf(out->id, sizeof out->id, "%s", id ? id : "?");
    const char *miss = json_is_object(row) ? row_missing(row, false) : "expected an object";
    if (miss[0])
        return px_error_set(err, PX_ERR_INVALID, NULL, 0, 0, "row %s: %s", out->id, miss);
    const json_t *jh = json_object_get(row, "hardware"), *jm = json_object_get(row, "model");
    const char *gpu = jstr(jh, "gpu");
    snprintf(out->family, sizeof out->family, "%.*s/%s", (int)strcspn(out->id, "-"), out->id,
             gpu);
    out->moe = json_is_object(json_object_get(jm, "moe"));
    char notes[512];
    lower(jstr(jm, "arch_notes"), notes, sizeof notes);
    out->mla = out->moe && strstr(notes, "mla");
    out->gpus = (int)jint(jh, "num_gpus");
    out->seq_len = jint(jm, "seq_len");
    snprintf(out->hw_name, sizeof out->hw_name, "%s",
             px_row_hw_name(gpu, jnum(jh, "gpu_memory_gb")));
    row_layout(json_object_get(row, "parallel"), out);
    row_measured(json_object_get(row, "measured"), out);
    out->precision = px_row_precision(jstr(row, "precision"));
    snprintf(out->framework, sizeof out->framework, "%s",
             px_row_framework(jstr(row, "framework")));
    px_row_release(jstr(row, "framework"), out->release, sizeof out->release);
    row_finetune(row, out);
    px_status st = row_model(row, out, err);
    if (st == PX_OK)
        st = row_hw(jh, profiles_dir, out, err);
    if (st != PX_OK)
        return st;
    if (out->vocab_default) {
        char n[96];
        snprintf(n, sizeof n, "vocabulary unpublished: %lld assumed", (long long)out->model.vocab);
        add_note(out, n);
    }
    return PX_OK;
}

/* ---- the plan call ---- */

void px_row_search_opts(const px_row_call *call, px_search_opts *o)
{
    px_search_opts_init(o);
    o->seq_len = call->seq_len;
    o->tp = call->tp;
    o->pp = call->pp;
    o->dp = call->dp;
    o->cp = call->cp;
    o->vpp = call->vpp;
    o->ep = call->ep;
    o->micro_batch = call->micro_batch;
    o->global_batch = call->global_batch;
    o->zero = call->zero;
    o->shard_group = call->shard_group;
    o->recompute = call->recompute;
    o->precision = call->precision;
    if (call->finetune[0]) /* "lora" or "full": row_finetune's words */
        px_finetune_mode_parse(call->finetune, &o->finetune.mode, NULL);
}

px_status px_row_load_framework(const px_row_call *call, const char *name_or_path,
                                const char *dir, px_framework *out, px_error *err)
{
    return px_framework_load_release(name_or_path ? name_or_path : call->framework, dir,
                                     call->release, out, err);
}

px_status px_row_predict(const px_row_call *call, const px_hw *hw, const px_framework *fw,
                         px_row_result *out, px_error *err)
{
    memset(out, 0, sizeof *out);
    px_framework *own = NULL;
    px_search_result *res = malloc(sizeof *res);
    if (!res)
        return PX_FAIL(err, PX_ERR_NOMEM, "row %s: out of memory for the search", call->id);
    px_status st = PX_OK;
    if (!fw) {
        own = malloc(sizeof *own);
        st = own ? px_row_load_framework(call, NULL, NULL, own, err)
                 : PX_FAIL(err, PX_ERR_NOMEM, "row %s: out of memory", call->id);
        fw = own;
    }
    px_search_opts o;
    px_row_search_opts(call, &o);
    if (st == PX_OK)
        st = px_search_for_plan(&call->model, hw ? hw : &call->hw, fw, call->gpus, &o, false,
                                res, &out->fixed_uniform, err);
    if (st == PX_OK) {
        out->best = res->top[0];
        out->time_limited = res->milp_clock_hit > 0;
        out->global_batch = res->global_batch;
        const px_prediction *q = &out->best.pred;
        if (call->on == PX_ROW_ON_TOKENS) {
            out->predicted = q->tokens_per_s / call->gpus;
            out->err = (out->predicted - call->measured) / call->measured;
        } else if (call->on == PX_ROW_ON_MFU) {
            out->predicted = q->mfu;
            out->err = (out->predicted - call->measured) / call->measured;
        } else if (call->on == PX_ROW_ON_STEP) {
            out->predicted = q->time.step_s;
            out->err = (1.0 / out->predicted - 1.0 / call->measured) / (1.0 / call->measured);
        }
    }
    free(own);
    free(res);
    return st;
}

static void append(char *buf, size_t n, const char *fmt, long long v)
{
    size_t u = strlen(buf);
    if (u < n)
        snprintf(buf + u, n - u, fmt, v);
}

void px_row_plan_args(const px_row_call *c, char *buf, size_t n)
{
    buf[0] = '\0';
    append(buf, n, "--gpus %lld", c->gpus);
    append(buf, n, " --seq %lld", c->seq_len);
    append(buf, n, " --tp %lld", c->tp);
    append(buf, n, " --pp %lld", c->pp);
    append(buf, n, " --dp %lld", c->dp);
    const struct {
        const char *fmt;
        long long v;
    } opt[] = {{" --cp %lld", c->cp}, {" --vpp %lld", c->vpp}, {" --ep %lld", c->ep},
               {" --micro-batch %lld", c->micro_batch},
               {" --global-batch %lld", c->global_batch},
               {" --shard-group %lld", c->shard_group}};
    for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++)
        if (opt[i].v)
            append(buf, n, opt[i].fmt, opt[i].v);
    if (c->zero >= 0)
        append(buf, n, " --zero %lld", c->zero);
    size_t u = strlen(buf);
    if (c->recompute >= 0 && u < n)
        snprintf(buf + u, n - u, " --recompute %s", px_recompute_name(c->recompute));
    u = strlen(buf);
    if (c->precision != PX_PREC_BF16 && u < n)
        snprintf(buf + u, n - u, " --precision %s", px_precision_name(c->precision));
    u = strlen(buf);
    if (u < n)
        snprintf(buf + u, n - u, " --framework %s%s%s%s%s --json", c->framework,
                 c->release[0] ? " --framework-release " : "", c->release,
                 c->finetune[0] ? " --finetune " : "", c->finetune);
}
