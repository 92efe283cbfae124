/* test_model_fields.c — the fields that change what a model computes but not
 * what it costs (RoPE, norm epsilons, the router's options): read from the
 * presets and from Hugging Face config.json under each type's own names and
 * defaults, refused by name when out of range, and carried through the plan
 * file's model object unchanged. */
#include <jansson.h>
#include <string.h>

#include "data_util.h"
#include "px_model.h"
#include "px_plan_json.h"
#include "px_test.h"

static px_status load(const char *name_or_path, px_model *m, px_error *err)
{
    px_error_clear(err);
    memset(m, 0, sizeof *m);
    return px_model_load(name_or_path, NULL, m, err);
}

static px_status load_fixture(const char *dir, px_model *m, px_error *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/spec/hf/%s/config.json", data_source_root(), dir);
    px_status st = load(path, m, err);
    CHECK_MSG(st == PX_OK, "%s: %s", path, err->msg);
    return st;
}

/* A config.json written into the temp folder, loaded. */
static px_status load_text(const char *text, px_model *m, px_error *err)
{
    char path[512];
    data_write("config.json", text, path, sizeof path);
    return load(path, m, err);
}

#define TINY_LLAMA_HF                                                                       \
    "\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "           \
    "\"intermediate_size\": 128, \"vocab_size\": 256"

static void presets(void)
{
    px_model m;
    px_error err;
    /* Llama 3.1 (meta-llama/Llama-3.1-70B config.json): theta 500000, eps
     * 1e-5, rope_scaling llama3 (8, 1, 4, 8192) */
    if (load("llama3-70b", &m, &err) == PX_OK)
        CHECK(m.rope_theta == 500000.0 && m.norm_eps == 1e-5 &&
              m.rope_scaling == PX_ROPE_LLAMA3 && m.rope_factor == 8.0 &&
              m.rope_low_freq_factor == 1.0 && m.rope_high_freq_factor == 4.0 &&
              m.rope_original_max_positions == 8192);
    /* DeepSeek-V3: interleaved rope pairs */
    if (load("deepseek-v3", &m, &err) == PX_OK)
        CHECK(m.rope_interleave && m.rope_scaling == PX_ROPE_NONE && !m.o_bias);
    /* GPT: biases on every linear layer */
    if (load("tiny-gpt", &m, &err) == PX_OK)
        CHECK(m.qkv_bias && m.o_bias);
    /* Qwen3-235B-A22B: theta 1e6, eps 1e-6 */
    if (load("qwen3-235b-a22b", &m, &err) == PX_OK)
        CHECK(m.rope_theta == 1e6 && m.norm_eps == 1e-6);
    /* DeepSeek-V3: eps 1e-6 everywhere, latent norms included */
    if (load("deepseek-v3", &m, &err) == PX_OK)
        CHECK(m.rope_theta == 10000.0 && m.norm_eps == 1e-6 && m.latent_norm_eps == 1e-6);
    /* renormalised top-k gates: Mixtral, Qwen3-235B-A22B, DeepSeek-V3 */
    if (load("mixtral-8x7b", &m, &err) == PX_OK)
        CHECK(m.norm_topk_prob);
    if (load("qwen3-235b-a22b", &m, &err) == PX_OK)
        CHECK(m.norm_topk_prob);
    if (load("deepseek-v3", &m, &err) == PX_OK)
        CHECK(m.norm_topk_prob && m.scoring_func == PX_SCORING_SIGMOID && m.n_group == 8 &&
              m.topk_group == 4 && m.routed_scaling_factor == 2.5);
    if (load("tiny-moe", &m, &err) == PX_OK)
        CHECK(!m.norm_topk_prob && m.scoring_func == PX_SCORING_SOFTMAX && m.n_group == 1 &&
              m.topk_group == 1 && m.routed_scaling_factor == 1.0);
    /* a preset that names none: the schema's defaults */
    if (load("tiny-llama", &m, &err) == PX_OK)
        CHECK(m.rope_theta == PX_ROPE_THETA_DEFAULT && m.norm_eps == PX_NORM_EPS_DEFAULT &&
              m.latent_norm_eps == PX_LATENT_NORM_EPS_DEFAULT);
}

static void hf_numerics(void)
{
    px_model m;
    px_error err;
    if (load_fixture("Meta-Llama-3.1-70B", &m, &err) == PX_OK)
        CHECK(m.rope_theta == 500000.0 && m.norm_eps == 1e-5 &&
              m.rope_scaling == PX_ROPE_LLAMA3 && m.rope_factor == 8.0 &&
              m.rope_low_freq_factor == 1.0 && m.rope_high_freq_factor == 4.0 &&
              m.rope_original_max_positions == 8192 && !m.qkv_bias && !m.o_bias);
    if (load_fixture("Qwen3-8B", &m, &err) == PX_OK)
        CHECK(m.rope_theta == 1e6 && m.norm_eps == 1e-6);
    if (load_fixture("DeepSeek-V3", &m, &err) == PX_OK)
        CHECK(m.norm_eps == 1e-6 && m.latent_norm_eps == 1e-6);
    if (load_fixture("gpt2", &m, &err) == PX_OK) /* layer_norm_epsilon */
        CHECK(m.norm_eps == 1e-5);

    /* absent: transformers' per-type defaults */
    CHECK(load_text("{\"model_type\": \"llama\", " TINY_LLAMA_HF "}", &m, &err) == PX_OK);
    CHECK(m.rope_theta == 10000.0 && m.norm_eps == 1e-6);
    CHECK(load_text("{\"model_type\": \"mixtral\", " TINY_LLAMA_HF
                    ", \"num_local_experts\": 4, \"num_experts_per_tok\": 2}",
                    &m, &err) == PX_OK);
    CHECK_MSG(m.rope_theta == 1e6 && m.norm_eps == 1e-5, "mixtral defaults: %g %g",
              m.rope_theta, m.norm_eps);
    CHECK(load_text("{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4, "
                    "\"vocab_size\": 256}",
                    &m, &err) == PX_OK);
    CHECK(m.norm_eps == 1e-5);

    /* transformers 5 writes rope_theta inside rope_parameters: it wins */
    CHECK(load_text("{\"model_type\": \"qwen3\", " TINY_LLAMA_HF ", \"rope_theta\": 5, "
                    "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 123456.0},"
                    " \"rms_norm_eps\": 1e-7}",
                    &m, &err) == PX_OK);
    CHECK_MSG(m.rope_theta == 123456.0 && m.norm_eps == 1e-7, "%g %g", m.rope_theta,
              m.norm_eps);

    /* norm_topk_prob: Mixtral always; Qwen3-MoE by its config (default false) */
    if (load_fixture("Mixtral-8x7B-v0.1", &m, &err) == PX_OK)
        CHECK(m.norm_topk_prob);
    if (load_fixture("Qwen3-235B-A22B", &m, &err) == PX_OK)
        CHECK(m.norm_topk_prob);
    if (load_fixture("DeepSeek-V3", &m, &err) == PX_OK)
        CHECK(m.norm_topk_prob && m.scoring_func == PX_SCORING_SIGMOID && m.n_group == 8 &&
              m.topk_group == 4 && m.routed_scaling_factor == 2.5);
    CHECK(load_text("{\"model_type\": \"qwen3_moe\", " TINY_LLAMA_HF ", \"num_experts\": 4, "
                    "\"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32}",
                    &m, &err) == PX_OK);
    CHECK(!m.norm_topk_prob);
    CHECK(load_text("{\"model_type\": \"qwen3_moe\", " TINY_LLAMA_HF ", \"num_experts\": 4, "
                    "\"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32, "
                    "\"norm_topk_prob\": true}",
                    &m, &err) == PX_OK);
    CHECK(m.norm_topk_prob);

    /* deepseek_v3 without the router keys: transformers' defaults; a softmax
     * scoring_func is refused by name */
#define TINY_DSV3                                                                           \
    "\"model_type\": \"deepseek_v3\", " TINY_LLAMA_HF ", \"n_routed_experts\": 16, "           \
    "\"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32, \"kv_lora_rank\": 16, "        \
    "\"qk_nope_head_dim\": 16, \"qk_rope_head_dim\": 8, \"v_head_dim\": 16"
    CHECK(load_text("{" TINY_DSV3 "}", &m, &err) == PX_OK);
    CHECK_MSG(m.scoring_func == PX_SCORING_SIGMOID && m.n_group == 8 && m.topk_group == 4 &&
                  m.routed_scaling_factor == 2.5 && m.norm_topk_prob && m.norm_eps == 1e-6,
              "%s", err.msg);
    CHECK(load_text("{" TINY_DSV3 ", \"scoring_func\": \"softmax\"}", &m, &err) ==
          PX_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "scoring_func") != NULL, "%s", err.msg);
    /* 16 experts in 8 groups keeping 4 hold 8 >= 2; 16 groups of one do not split */
    CHECK(load_text("{" TINY_DSV3 ", \"n_group\": 16, \"topk_group\": 4}", &m, &err) ==
          PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "n_group") != NULL, "%s", err.msg);
    CHECK(load_text("{" TINY_DSV3 ", \"n_group\": 8, \"topk_group\": 9}", &m, &err) ==
          PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "topk_group") != NULL, "%s", err.msg);

    /* RoPE scaling in transformers 5's rope_parameters; yarn carried; other
     * types and a llama3 without its factors refused by name */
    CHECK(load_text("{\"model_type\": \"llama\", " TINY_LLAMA_HF ", \"max_position_embeddings\": "
                    "4096, \"rope_parameters\": {\"rope_type\": \"llama3\", \"rope_theta\": "
                    "500000.0, \"factor\": 32.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": "
                    "4.0}}",
                    &m, &err) == PX_OK);
    CHECK_MSG(m.rope_scaling == PX_ROPE_LLAMA3 && m.rope_factor == 32.0 &&
                  m.rope_original_max_positions == 4096 && m.rope_theta == 500000.0,
              "llama3 in rope_parameters: %d %g %lld", (int)m.rope_scaling, m.rope_factor,
              (long long)m.rope_original_max_positions);
    CHECK(load_text("{\"model_type\": \"qwen2\", " TINY_LLAMA_HF ", \"rope_scaling\": {\"type\": "
                    "\"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 32768}}",
                    &m, &err) == PX_OK);
    CHECK(m.rope_scaling == PX_ROPE_YARN && m.rope_factor == 4.0 &&
          m.rope_original_max_positions == 32768);
    CHECK(load_text("{\"model_type\": \"llama\", " TINY_LLAMA_HF ", \"rope_scaling\": "
                    "{\"rope_type\": \"dynamic\", \"factor\": 2.0}}",
                    &m, &err) == PX_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "rope_scaling.rope_type \"dynamic\"") != NULL, "%s", err.msg);
    CHECK(load_text("{\"model_type\": \"llama\", " TINY_LLAMA_HF ", \"rope_scaling\": "
                    "{\"rope_type\": \"llama3\", \"factor\": 8.0}}",
                    &m, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "rope_scaling.low_freq_factor") != NULL, "%s", err.msg);
    CHECK(load_text("{\"model_type\": \"llama\", " TINY_LLAMA_HF ", \"rope_scaling\": null}",
                    &m, &err) == PX_OK);
    CHECK(m.rope_scaling == PX_ROPE_NONE);

    /* biases as each type's modeling code has them */
    CHECK(load_text("{\"model_type\": \"llama\", " TINY_LLAMA_HF ", \"attention_bias\": true}",
                    &m, &err) == PX_OK);
    CHECK(m.qkv_bias && m.o_bias);
    CHECK(load_text("{\"model_type\": \"qwen2\", " TINY_LLAMA_HF "}", &m, &err) == PX_OK);
    CHECK(m.qkv_bias && !m.o_bias);
    CHECK(load_text("{\"model_type\": \"mistral\", " TINY_LLAMA_HF ", \"attention_bias\": true}",
                    &m, &err) == PX_OK);
    CHECK(!m.qkv_bias && !m.o_bias && !m.attention_sinks);
    CHECK(load_text("{\"model_type\": \"gpt_oss\", " TINY_LLAMA_HF
                    ", \"num_local_experts\": 4, \"num_experts_per_tok\": 2}",
                    &m, &err) == PX_OK);
    CHECK(m.qkv_bias && m.o_bias && m.attention_sinks && m.norm_topk_prob);
    CHECK(load_text("{\"model_type\": \"llama\", " TINY_LLAMA_HF ", \"mlp_bias\": true}", &m,
                    &err) == PX_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "mlp_bias") != NULL, "%s", err.msg);
    CHECK(load_text("{" TINY_DSV3 ", \"attention_bias\": true}", &m, &err) ==
          PX_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "attention_bias") != NULL, "%s", err.msg);
    CHECK(load_text("{" TINY_DSV3 "}", &m, &err) == PX_OK);
    CHECK(m.rope_interleave);
    CHECK(load_text("{" TINY_DSV3 ", \"rope_interleave\": false}", &m, &err) == PX_OK);
    CHECK(!m.rope_interleave);

    /* out of range: the key named */
    CHECK(load_text("{\"model_type\": \"llama\", " TINY_LLAMA_HF ", \"rms_norm_eps\": -1}", &m,
                    &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "rms_norm_eps") != NULL, "%s", err.msg);
    CHECK(load_text("{\"model_type\": \"llama\", " TINY_LLAMA_HF ", \"rope_theta\": \"big\"}",
                    &m, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "rope_theta") != NULL, "%s", err.msg);
}

/* The plan's model object: every field written, read back the same. */
static void plan_round_trip(void)
{
    px_model m, back;
    px_error err;
    if (load("deepseek-v3", &m, &err) != PX_OK)
        return;
    m.rope_theta = 123456.5;
    m.norm_eps = 3e-6;
    m.latent_norm_eps = 7e-7;
    m.norm_topk_prob = !m.norm_topk_prob;
    m.scoring_func = PX_SCORING_SOFTMAX;
    m.n_group = 4;
    m.topk_group = 3;
    m.routed_scaling_factor = 1.75;
    m.rope_scaling = PX_ROPE_LLAMA3;
    m.rope_factor = 16.0;
    m.rope_low_freq_factor = 2.0;
    m.rope_high_freq_factor = 8.0;
    m.rope_original_max_positions = 2048;
    m.rope_interleave = false;
    m.o_bias = true;
    m.attention_sinks = true;
    m.sandwich_norms = true;
    json_t *obj = NULL;
    CHECK(px_model_to_json(&m, &obj, &err) == PX_OK);
    CHECK(json_is_number(json_object_get(obj, "rope_theta")) &&
          json_is_number(json_object_get(obj, "norm_eps")) &&
          json_is_number(json_object_get(obj, "latent_norm_eps")));
    px_error_clear(&err);
    CHECK_MSG(px_model_from_json(obj, "plan.json", "model", &back, &err) == PX_OK, "%s",
              err.msg);
    CHECK(back.rope_theta == m.rope_theta && back.norm_eps == m.norm_eps &&
          back.latent_norm_eps == m.latent_norm_eps && back.norm_topk_prob == m.norm_topk_prob &&
          back.scoring_func == m.scoring_func && back.n_group == m.n_group &&
          back.topk_group == m.topk_group &&
          back.routed_scaling_factor == m.routed_scaling_factor &&
          back.rope_scaling == m.rope_scaling && back.rope_factor == m.rope_factor &&
          back.rope_low_freq_factor == m.rope_low_freq_factor &&
          back.rope_high_freq_factor == m.rope_high_freq_factor &&
          back.rope_original_max_positions == m.rope_original_max_positions &&
          back.rope_interleave == m.rope_interleave && back.o_bias == m.o_bias &&
          back.attention_sinks == m.attention_sinks && back.sandwich_norms &&
          json_is_true(json_object_get(obj, "sandwich_norms")));
    /* a zero epsilon in a plan is refused, naming model.norm_eps */
    json_object_set_new(obj, "norm_eps", json_real(0.0));
    px_error_clear(&err);
    CHECK(px_model_from_json(obj, "plan.json", "model", &back, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "model.norm_eps") != NULL, "%s", err.msg);
    json_decref(obj);
    /* llama3 scaling blends between low and high: low < high */
    if (load("llama3-8b", &m, &err) == PX_OK) {
        m.rope_low_freq_factor = 4.0;
        px_error_clear(&err);
        CHECK(px_model_validate(&m, &err) == PX_ERR_INVALID);
        CHECK_MSG(strstr(err.msg, "rope_low_freq_factor") != NULL, "%s", err.msg);
    }
    /* gates to renormalise need experts */
    if (load("tiny-llama", &m, &err) != PX_OK)
        return;
    m.norm_topk_prob = true;
    px_error_clear(&err);
    CHECK(px_model_validate(&m, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "norm_topk_prob") != NULL, "%s", err.msg);
}

int main(void)
{
    presets();
    hf_numerics();
    plan_round_trip();
    data_cleanup();
    return px_test_result("model_fields");
}
