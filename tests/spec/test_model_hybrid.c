/* test_model_hybrid.c — hybrid Mamba-2 stacks (layer_pattern, mamba): the
 * Nemotron presets' parameter counts from the Megatron-Core mixer's formula
 * written out here, the published totals, and every way a hybrid spec or a
 * nemotron_h config.json can be wrong, each refused naming the field and
 * the allowed values. */
#include <stdlib.h>
#include <string.h>

#include "data_util.h"
#include "px_hybrid.h"
#include "px_model.h"
#include "px_test.h"

/* The sizes of a Nemotron model, as the recipe writes them. */
typedef struct {
    const char *name, *pattern;
    int64_t h, a, kv, head_dim, ffn, V;
    int64_t H, P, N, G, conv;         /* Mamba heads, head dim, state, groups, conv taps */
    int64_t E, top_k, moe_ffn, shared; /* experts; shared: the shared expert's inner size */
} nemo_sizes;

/* Parameters written out layer by layer (Megatron-Core's MambaMixer,
 * mamba_mixer.py: in_proj h x (2di + 2GN + H) with its fused RMSNorm h,
 * conv1d weights and biases (di + 2GN)(d_conv + 1), dt_bias, A_log and D a
 * head, the gated RMSNorm di, out_proj di x h; attention: norm h and the
 * q, k, v, o matrices; MLP: norm h and an up and a down projection of the
 * squared ReLU; experts: norm h, router h x E, the routed and shared
 * experts; embedding and untied head V x h, final norm h).  total and
 * active (the top_k routed experts of E). */
static void hand_count(const nemo_sizes *s, int64_t *total, int64_t *active)
{
    const int64_t h = s->h, di = s->H * s->P, gn = s->G * s->N;
    const int64_t mamba =
        h * (2 * di + 2 * gn + s->H) + h + (di + 2 * gn) * (s->conv + 1) + 3 * s->H + di + di * h;
    const int64_t attn = h + h * s->a * s->head_dim + 2 * h * s->kv * s->head_dim +
                         s->a * s->head_dim * h;
    const int64_t mlp = h + 2 * h * s->ffn;
    const int64_t expert = 2 * h * s->moe_ffn, shared = 2 * h * s->shared;
    *total = *active = 2 * s->V * h + h;
    for (const char *c = s->pattern; *c; c++) {
        int64_t all = 0, act = 0;
        switch (*c) {
        case 'M': all = act = mamba; break;
        case '*': all = act = attn; break;
        case '-': all = act = mlp; break;
        case 'E':
            all = h + h * s->E + s->E * expert + shared;
            act = h + h * s->E + s->top_k * expert + shared;
            break;
        default: CHECK_MSG(0, "symbol %c", *c);
        }
        *total += all;
        *active += act;
    }
}

static void check_hand(const nemo_sizes *s)
{
    px_model m = data_load_model(s->name);
    px_param_count c;
    px_model_count_params(&m, &c);
    int64_t total, active;
    hand_count(s, &total, &active);
    fprintf(stderr, "%-24s total %.4f B active %.4f B\n", s->name, c.total / 1e9,
            c.active / 1e9);
    CHECK_MSG(c.total == total, "%s: total %lld, by hand %lld", s->name, (long long)c.total,
              (long long)total);
    CHECK_MSG(c.active == active, "%s: active %lld, by hand %lld", s->name,
              (long long)c.active, (long long)active);
    CHECK(strcmp(m.layer_pattern, s->pattern) == 0 && m.mlp_act == PX_ACT_RELU2 &&
          !px_model_mlp_gated(&m) && !m.tied_embeddings);
    /* the parts add up, the per-layer function agrees */
    int64_t layers = 0;
    for (int64_t i = 0; i < m.n_layers; i++)
        layers += px_model_layer_params(&m, i);
    CHECK(layers == c.attention + c.dense_mlp + c.expert_mlp + c.shared_expert_mlp + c.router +
                        c.norms + c.mamba);
    CHECK(c.total == layers + c.embedding + c.lm_head + c.final_norm);
    CHECK(c.mtp == 0);
}

/* The fields a preset-schema hybrid shares with a transformer. */
static const char *good_hybrid =
    "\"block\": \"llama\", \"hidden\": 64, \"n_layers\": 4, \"n_heads\": 4, \"ffn\": 128,\n"
    " \"vocab\": 256, \"seq_len\": 32";

static px_status try_text(const char *name, const char *text, px_error *err)
{
    char path[512];
    px_model m;
    data_write(name, text, path, sizeof path);
    px_error_clear(err);
    return px_model_load(path, NULL, &m, err);
}

/* The preset text with body added; the error (if any) must name all of the
 * words in want (NULL-terminated). */
static void refused(const char *file, const char *body, px_status want_st,
                    const char *const *want)
{
    char text[2048];
    snprintf(text, sizeof text, "{\"name\": \"h\", %s, %s}\n", good_hybrid, body);
    px_error err;
    px_status st = try_text(file, text, &err);
    CHECK_MSG(st == want_st, "%s: status %d, want %d (%s)", file, (int)st, (int)want_st,
              err.msg);
    for (int i = 0; want[i]; i++)
        CHECK_MSG(strstr(err.msg, want[i]) != NULL, "%s: message lacks \"%s\": %s", file,
                  want[i], err.msg);
}

/* A nemotron_h config.json with body's keys after the 4-layer basics. */
#define HF_BASE                                                                              \
    "\"model_type\": \"nemotron_h\", \"hidden_size\": 64, \"num_hidden_layers\": 4,\n"      \
    " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"intermediate_size\": 128,\n" \
    " \"vocab_size\": 256"
/* its Mamba sizes */
#define HF_MAMBA "\"mamba_num_heads\": 8, \"mamba_head_dim\": 16, \"ssm_state_size\": 16"
/* the Mamba sizes and a pattern */
#define PAT(p) HF_MAMBA ", \"hybrid_override_pattern\": \"" p "\""

static void hf_refused(const char *file, const char *body, px_status want_st,
                       const char *const *want)
{
    char text[2048];
    snprintf(text, sizeof text, "{" HF_BASE ", %s}\n", body);
    px_error err;
    px_status st = try_text(file, text, &err);
    CHECK_MSG(st == want_st, "%s: status %d, want %d (%s)", file, (int)st, (int)want_st,
              err.msg);
    CHECK_MSG(strstr(err.file, file) != NULL, "%s: error names file \"%s\"", file, err.file);
    for (int i = 0; want[i]; i++)
        CHECK_MSG(strstr(err.msg, want[i]) != NULL, "%s: message lacks \"%s\": %s", file,
                  want[i], err.msg);
}

#define W(...) ((const char *const[]){__VA_ARGS__, NULL})

int main(void)
{
    /* The recipes' sizes (Megatron-Bridge recipes/nemotronh/h100/nemotronh.py
     * and nemotron_3_nano.py), counted by hand. */
    static const nemo_sizes h8 = {
        "nemotron-h-8b", "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
        4096, 32, 8, 128, 21504, 131072, 128, 64, 128, 8, 4, 0, 0, 0, 0};
    static const nemo_sizes h56 = {
        "nemotron-h-56b",
        "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-"
        "M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
        8192, 64, 8, 128, 32768, 131072, 256, 64, 256, 8, 4, 0, 0, 0, 0};
    static const nemo_sizes nano = {
        "nemotron-3-nano-30b-a3b", "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
        2688, 32, 2, 128, 1856, 131072, 64, 64, 128, 8, 4, 128, 6, 1856, 3712};
    check_hand(&h8);
    check_hand(&h56);
    check_hand(&nano);

    /* Published sizes.  Megatron-Bridge docs/models/nemotron/nemotronh.md
     * ("Nemotron H 8B Specifications: Parameters: 8B", "56B ... 56B") and
     * docs/models/nemotron/nemotron3-nano.md ("3.5B active parameters and
     * 30B parameters in total"; the model card's 31.6 B total rounds to
     * the 30B of the name, hence the 6 % bound). */
    px_param_count c;
    px_model m = data_load_model("nemotron-h");
    CHECK(strcmp(m.name, "nemotron-h-8b") == 0);
    px_model_count_params(&m, &c);
    CHECK_CLOSE(c.total, 8e9, 0.02, 0);
    m = data_load_model("nemotron-h-56b");
    px_model_count_params(&m, &c);
    CHECK_CLOSE(c.total, 56e9, 0.01, 0);
    m = data_load_model("nemotron-3-nano");
    CHECK(strcmp(m.name, "nemotron-3-nano-30b-a3b") == 0);
    px_model_count_params(&m, &c);
    CHECK_CLOSE(c.total, 30e9, 0.06, 0);
    CHECK_CLOSE(c.active, 3.5e9, 0.03, 0);
    CHECK(m.n_shared_experts == 2 && m.scoring_func == PX_SCORING_SIGMOID &&
          m.routed_scaling_factor == 2.5 && m.n_group == 1 && m.topk_group == 1);

    /* Preset-schema errors, each naming the field and what is allowed. */
    refused("sym.json", "\"layer_pattern\": \"M*G-\", \"mamba\": {\"heads\": 4, \"head_dim\": "
                        "16, \"state\": 8}",
            PX_ERR_INVALID, W("layer_pattern[2] 'G'", "M (Mamba-2)", "* (attention)",
                              "- (MLP)", "E (experts)"));
    refused("len.json", "\"layer_pattern\": \"M*-\", \"mamba\": {\"heads\": 4, \"head_dim\": "
                        "16, \"state\": 8}",
            PX_ERR_INVALID, W("layer_pattern has 3 symbols", "n_layers is 4"));
    refused("nomamba.json", "\"layer_pattern\": \"M*-M\"", PX_ERR_INVALID,
            W("'M' layers need mamba heads, head_dim and state > 0"));
    refused("groups.json", "\"layer_pattern\": \"M*-M\", \"mamba\": {\"heads\": 6, \"head_dim\": "
                           "16, \"state\": 8, \"groups\": 4}",
            PX_ERR_INVALID, W("mamba groups 4 must divide mamba heads 6"));
    refused("noexp.json", "\"layer_pattern\": \"*E*-\"", PX_ERR_INVALID,
            W("'E' layers need n_experts > 0"));
    refused("mtp.json", "\"layer_pattern\": \"*-*-\", \"n_mtp_modules\": 1", PX_ERR_INVALID,
            W("layer_pattern", "n_mtp_modules"));
    refused("mkey.json", "\"layer_pattern\": \"M*-M\", \"mamba\": {\"heads\": 4, \"head_dim\": "
                         "16, \"state\": 8, \"width\": 2}",
            PX_ERR_INVALID, W("width", "heads", "conv"));
    refused("act.json", "\"mlp_act\": \"relu\"", PX_ERR_INVALID, W("mlp_act", "relu2"));
    /* a good one loads, with the defaults groups 1, conv 4 */
    {
        char text[1024];
        snprintf(text, sizeof text,
                 "{\"name\": \"h\", %s, \"mlp_act\": \"relu2\", \"layer_pattern\": \"M*-M\", "
                 "\"mamba\": {\"heads\": 4, "
                 "\"head_dim\": 16, \"state\": 8}}\n",
                 good_hybrid);
        char path[512];
        data_write("ok.json", text, path, sizeof path);
        px_error err;
        CHECK_MSG(px_model_load(path, NULL, &m, &err) == PX_OK, "%s", err.msg);
        CHECK(m.mamba_groups == 1 && m.mamba_conv == PX_MAMBA_CONV_DEFAULT &&
              m.mlp_act == PX_ACT_RELU2 && !px_model_mlp_gated(&m));
        CHECK(px_model_layer_kind(&m, 0) == PX_LAYER_MAMBA &&
              px_model_layer_kind(&m, 1) == PX_LAYER_ATTENTION &&
              px_model_layer_kind(&m, 2) == PX_LAYER_MLP);
    }

    /* nemotron_h config.json: a good one, then each refusal naming the key. */
    {
        char text[2048], path[512];
        px_error err;
        snprintf(text, sizeof text,
                 "{" HF_BASE ", " PAT("M*EM") ", \"n_groups\": 2,"
                 " \"n_routed_experts\": 8,"
                 " \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32,"
                 " \"moe_shared_expert_intermediate_size\": 64, \"routed_scaling_factor\": 2.5,"
                 " \"attention_head_dim\": 32}\n");
        data_write("hf_ok.json", text, path, sizeof path);
        CHECK_MSG(px_model_load(path, NULL, &m, &err) == PX_OK, "%s", err.msg);
        CHECK(m.head_dim == 32 && m.n_shared_experts == 2 && m.mamba_groups == 2 &&
              m.mamba_conv == 4 && m.scoring_func == PX_SCORING_SIGMOID && m.norm_topk_prob &&
              m.routed_scaling_factor == 2.5 && m.mlp_act == PX_ACT_RELU2 &&
              m.norm_eps == 1e-5 && m.rope_theta == PX_ROPE_THETA_DEFAULT &&
              m.rope_scaling == PX_ROPE_NONE && !m.tied_embeddings);
        /* a dense pattern ignores the MoE keys a config may carry at their defaults */
        snprintf(text, sizeof text,
                 "{" HF_BASE ", " PAT("M*-M") ","
                 " \"n_routed_experts\": 8,"
                 " \"moe_intermediate_size\": 7688}\n");
        data_write("hf_dense.json", text, path, sizeof path);
        CHECK_MSG(px_model_load(path, NULL, &m, &err) == PX_OK, "%s", err.msg);
        CHECK(m.n_experts == 0 && m.moe_ffn == 0);
    }
    static const char *const bad_syms[] = {"G", "D", "+", "|", "/"};
    for (size_t i = 0; i < sizeof bad_syms / sizeof bad_syms[0]; i++) {
        char body[256], file[32], at[64];
        snprintf(body, sizeof body, PAT("M*%s-"), bad_syms[i]);
        snprintf(file, sizeof file, "hf_sym%zu.json", i);
        snprintf(at, sizeof at, "hybrid_override_pattern[2] '%s'", bad_syms[i]);
        hf_refused(file, body, PX_ERR_UNSUPPORTED,
                   W(at, "allowed symbols", "M (Mamba-2)", "* (attention)", "- (MLP)",
                     "E (experts)"));
    }
    hf_refused("hf_len.json", PAT("M*-M-"), PX_ERR_INVALID,
               W("hybrid_override_pattern has 5 symbols", "num_hidden_layers is 4"));
    {
        /* longer than the layer bound: refused before it is copied */
        static char body[PX_MODEL_MAX_LAYERS + 200];
        char *e = body + snprintf(body, sizeof body, HF_MAMBA ", \"hybrid_override_pattern\": \"");
        memset(e, 'M', PX_MODEL_MAX_LAYERS + 1);
        snprintf(e + PX_MODEL_MAX_LAYERS + 1, 8, "\"");
        static char text[PX_MODEL_MAX_LAYERS + 1024];
        snprintf(text, sizeof text, "{" HF_BASE ", %s}\n", body);
        px_error err;
        CHECK(try_text("hf_long.json", text, &err) == PX_ERR_INVALID);
        CHECK_MSG(strstr(err.msg, "at most 1024 layers") != NULL, "%s", err.msg);
    }
    hf_refused("hf_nopat.json", HF_MAMBA ", \"conv_kernel\": 4", PX_ERR_INVALID,
               W("hybrid_override_pattern: missing required field"));
    hf_refused("hf_act.json", PAT("M*-M") ", \"mlp_hidden_act\": \"silu\"", PX_ERR_UNSUPPORTED,
               W("mlp_hidden_act", "\"silu\"", "allowed: relu2"));
    hf_refused("hf_mtp.json", PAT("M*-M") ", \"num_nextn_predict_layers\": 2",
               PX_ERR_UNSUPPORTED, W("num_nextn_predict_layers 2", "allowed: 0"));
#define HF_EXPERTS \
    ", \"n_routed_experts\": 8, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32"
    hf_refused("hf_latent.json", PAT("M*EM") HF_EXPERTS ", \"moe_latent_size\": 16",
               PX_ERR_UNSUPPORTED, W("moe_latent_size 16", "latent MoE", "allowed: 0"));
    hf_refused("hf_shared.json",
               PAT("M*EM") HF_EXPERTS ", \"moe_shared_expert_intermediate_size\": 48",
               PX_ERR_UNSUPPORTED,
               W("moe_shared_expert_intermediate_size 48", "moe_intermediate_size 32",
                 "allowed: 0 or a multiple"));
    hf_refused("hf_noexp.json", PAT("M*EM"), PX_ERR_INVALID,
               W("n_routed_experts: missing required field"));
    hf_refused("hf_nomamba.json",
               "\"mamba_num_heads\": 8, \"mamba_head_dim\": 16, "
               "\"hybrid_override_pattern\": \"M*-M\"",
               PX_ERR_INVALID, W("ssm_state_size: missing required field"));
    hf_refused("hf_groups.json", PAT("M*-M") ", \"n_groups\": 3", PX_ERR_INVALID,
               W("n_groups 3 does not divide mamba_num_heads 8"));
    hf_refused("hf_bias.json", PAT("M*-M") ", \"use_bias\": true", PX_ERR_UNSUPPORTED,
               W("use_bias true", "allowed: false"));

    data_cleanup();
    return px_test_result("model_hybrid");
}
