/* test_model_hf.c — Hugging Face config.json files (fixtures under
 * tests/spec/hf/, written from the published configs) load into the same
 * architecture as the presets, with the published parameter counts. */
#include <string.h>

#include "data_util.h"
#include "px_model.h"
#include "px_sliding.h"
#include "px_test.h"

static px_status load_hf(const char *dir, px_model *m, px_error *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/spec/hf/%s/config.json", data_source_root(), dir);
    px_error_clear(err);
    memset(m, 0, sizeof *m);
    px_status st = px_model_load(path, NULL, m, err);
    CHECK_MSG(st == PX_OK, "%s: %s", path, err->msg);
    return st;
}

static int64_t total(const px_model *m)
{
    px_param_count c;
    px_model_count_params(m, &c);
    return c.total;
}

/* The HF config and the preset describe the same network. */
static void same_as_preset(const char *dir, const char *preset)
{
    px_model hf, pre;
    px_error err;
    if (load_hf(dir, &hf, &err) != PX_OK)
        return;
    CHECK(px_model_load(preset, NULL, &pre, &err) == PX_OK);
    CHECK_MSG(total(&hf) == total(&pre), "%s: %lld vs preset %lld", dir, (long long)total(&hf),
              (long long)total(&pre));
    px_param_count a, b;
    px_model_count_params(&hf, &a);
    px_model_count_params(&pre, &b);
    CHECK(a.active == b.active && a.mtp == b.mtp);
    CHECK(hf.block == pre.block && hf.attn == pre.attn && hf.hidden == pre.hidden &&
          hf.n_layers == pre.n_layers && hf.n_heads == pre.n_heads &&
          hf.n_kv_heads == pre.n_kv_heads && hf.head_dim == pre.head_dim &&
          hf.vocab == pre.vocab && hf.n_experts == pre.n_experts && hf.top_k == pre.top_k &&
          hf.qk_norm == pre.qk_norm && hf.tied_embeddings == pre.tied_embeddings);
    CHECK(hf.qkv_bias == pre.qkv_bias && hf.o_bias == pre.o_bias &&
          hf.attention_sinks == pre.attention_sinks && hf.norm_topk_prob == pre.norm_topk_prob &&
          hf.sliding_window == pre.sliding_window &&
          memcmp(hf.layer_sliding, pre.layer_sliding, sizeof hf.layer_sliding) == 0);
    CHECK(hf.mlp_act == pre.mlp_act && hf.ffn == pre.ffn && hf.moe_ffn == pre.moe_ffn &&
          hf.n_shared_experts == pre.n_shared_experts && hf.scoring_func == pre.scoring_func &&
          hf.routed_scaling_factor == pre.routed_scaling_factor && hf.norm_eps == pre.norm_eps);
    CHECK_MSG(strcmp(hf.layer_pattern, pre.layer_pattern) == 0 &&
                  hf.mamba_heads == pre.mamba_heads && hf.mamba_head_dim == pre.mamba_head_dim &&
                  hf.mamba_state == pre.mamba_state && hf.mamba_groups == pre.mamba_groups &&
                  hf.mamba_conv == pre.mamba_conv,
              "%s: hybrid fields differ from %s", dir, preset);
}

int main(void)
{
    same_as_preset("Meta-Llama-3.1-70B", "llama3-70b");
    same_as_preset("Mixtral-8x7B-v0.1", "mixtral-8x7b");
    same_as_preset("Qwen3-235B-A22B", "qwen3-235b-a22b");
    same_as_preset("DeepSeek-V3", "deepseek-v3");
    same_as_preset("gpt-oss-120b", "gpt-oss-120b");
    /* nemotron_h: written here in the HF key names with the 8B recipe's sizes */
    same_as_preset("nemotron-h-8b", "nemotron-h-8b");

    px_model m;
    px_error err;
    /* Llama 3.1: 131072 positions, but the planner's default length is the
     * 8192 it was pretrained at; the name comes from the folder. */
    if (load_hf("Meta-Llama-3.1-70B", &m, &err) == PX_OK) {
        CHECK(m.seq_len == 8192);
        CHECK(strcmp(m.name, "Meta-Llama-3.1-70B") == 0);
    }
    /* GPT-2 small: 124,439,808 parameters, the count every GPT-2 port
     * prints (12 h^2 + 13 h a layer, token + position tables, tied head). */
    if (load_hf("gpt2", &m, &err) == PX_OK) {
        CHECK(m.block == PX_BLOCK_GPT && m.ffn == 4 * 768 && m.tied_embeddings);
        CHECK(m.seq_len == 1024 && m.max_positions == 1024);
        CHECK(total(&m) == 124439808);
    }
    /* Mistral 7B: 7.24 B. */
    if (load_hf("Mistral-7B-v0.1", &m, &err) == PX_OK)
        CHECK_CLOSE(total(&m), 7.24e9, 0.002, 0);
    /* Qwen2-7B: 7.62 B, with q/k/v biases. */
    if (load_hf("Qwen2-7B", &m, &err) == PX_OK) {
        CHECK(m.qkv_bias && !m.qk_norm);
        CHECK_CLOSE(total(&m), 7.62e9, 0.002, 0);
    }
    /* Qwen3-8B: 8.19 B, head_dim 128 with q/k norms. */
    if (load_hf("Qwen3-8B", &m, &err) == PX_OK) {
        CHECK(m.qk_norm && m.head_dim == 128 && !m.qkv_bias);
        CHECK_CLOSE(total(&m), 8.19e9, 0.002, 0);
    }

    /* Gemma 2 9B: 9 241 705 984 parameters, google/gemma-2-9b's safetensors
     * total (tied 256k-token embedding, four RMSNorms of h a layer: the
     * sandwich norms), head_dim 256 wider than h/a, GeGLU; a config without
     * layer_types slides on every other layer, the first sliding
     * (transformers' default). */
    if (load_hf("gemma-2-9b", &m, &err) == PX_OK) {
        CHECK(m.tied_embeddings && m.head_dim == 256 && m.hidden / m.n_heads == 224);
        CHECK(m.mlp_act == PX_ACT_GELU && m.rope_fraction == 1.0); /* carried for execute */
        CHECK(m.sliding_window == 4096 && px_model_n_sliding_layers(&m) == 21);
        CHECK(px_model_layer_is_sliding(&m, 0) && !px_model_layer_is_sliding(&m, 1) &&
              px_model_layer_is_sliding(&m, 40) && !px_model_layer_is_sliding(&m, 41));
        CHECK(m.sandwich_norms);
        CHECK_MSG(total(&m) == 9241705984LL, "gemma-2-9b: %lld parameters",
                  (long long)total(&m));
    }
    /* Gemma 3 1B (the text model): q/k norms and sandwich norms, five
     * sliding layers of 512 keys then one full (sliding_window_pattern 6):
     * full at 5, 11, 17, 23. */
    if (load_hf("gemma-3-1b-pt", &m, &err) == PX_OK) {
        CHECK(m.qk_norm && m.sandwich_norms && m.tied_embeddings && m.n_kv_heads == 1);
        CHECK(px_model_n_sliding_layers(&m) == 22);
        for (int64_t l = 0; l < m.n_layers; l++)
            CHECK_MSG(px_model_layer_is_sliding(&m, l) == ((l + 1) % 6 != 0), "layer %lld",
                      (long long)l);
        CHECK_MSG(total(&m) == 999885952LL, "gemma-3-1b: %lld parameters (google/gemma-3-1b-pt's "
                  "safetensors total 999 885 952)", (long long)total(&m));
    }
    /* Phi-3-mini: 3.82 B, untied, a 2047-key window on every layer (its
     * fused qkv and gate_up weights are the same matrices, stacked). */
    if (load_hf("Phi-3-mini-4k", &m, &err) == PX_OK) {
        CHECK(!m.tied_embeddings && m.sliding_window == 2047);
        CHECK(m.mlp_act == PX_ACT_SILU && m.rope_fraction == 1.0);
        CHECK(px_model_n_sliding_layers(&m) == 32);
        CHECK_CLOSE(total(&m), 3.82e9, 0.002, 0);
    }
    /* Refusals name the field: a multimodal config, an MLP activation that is
     * not a gated one, a partial rotary factor outside (0, 1], a
     * sliding_window_pattern of 0. */
    static const struct {
        const char *json, *field;
    } refused[] = {
        {"{\"model_type\": \"gemma3\", \"text_config\": {\"model_type\": \"gemma3_text\"}}",
         "text_config"},
        {"{\"model_type\": \"phi3\", \"hidden_size\": 64, \"num_hidden_layers\": 2,"
         " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 256,"
         " \"hidden_act\": \"relu2\"}",
         "hidden_act"},
        {"{\"model_type\": \"phi3\", \"hidden_size\": 64, \"num_hidden_layers\": 2,"
         " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 256,"
         " \"partial_rotary_factor\": 1.5}",
         "partial_rotary_factor"},
        {"{\"model_type\": \"gemma3_text\", \"hidden_size\": 64, \"num_hidden_layers\": 2,"
         " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 256,"
         " \"sliding_window\": 16, \"sliding_window_pattern\": 0}",
         "sliding_window_pattern"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char p[512];
        data_write("refused.json", refused[i].json, p, sizeof p);
        px_error_clear(&err);
        CHECK(px_model_load(p, NULL, &m, &err) != PX_OK);
        CHECK_MSG(strstr(err.msg, refused[i].field) != NULL, "%s: %s", refused[i].field,
                  err.msg);
    }

    /* vocab_size left out (or null): transformers' default for the type,
     * said in the model's note; given, no note; not a size, refused */
    static const struct {
        const char *json;
        int64_t vocab;
    } vocab[] = {
        {"{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2,"
         " \"num_attention_heads\": 4, \"intermediate_size\": 128}",
         32000},
        {"{\"model_type\": \"qwen3\", \"hidden_size\": 64, \"num_hidden_layers\": 2,"
         " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": null}",
         151936},
        {"{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4}", 50257},
        {"{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2,"
         " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 256}",
         256},
    };
    for (size_t i = 0; i < sizeof vocab / sizeof vocab[0]; i++) {
        char p[512];
        data_write("vocab.json", vocab[i].json, p, sizeof p);
        px_error_clear(&err);
        CHECK(px_model_load(p, NULL, &m, &err) == PX_OK);
        CHECK_MSG(m.vocab == vocab[i].vocab, "%lld, want %lld", (long long)m.vocab,
                  (long long)vocab[i].vocab);
        bool noted = strstr(m.config_note, "vocab_size") != NULL;
        CHECK_MSG(noted == (vocab[i].vocab != 256), "note \"%s\"", m.config_note);
    }
    {
        char p[512];
        data_write("vocab.json",
                   "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2,"
                   " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": \"x\"}",
                   p, sizeof p);
        px_error_clear(&err);
        CHECK(px_model_load(p, NULL, &m, &err) != PX_OK && strstr(err.msg, "vocab_size"));
    }

    /* An unknown model_type lists the supported ones. */
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/spec/hf/unsupported-type.json", data_source_root());
    px_error_clear(&err);
    px_status st = px_model_load(path, NULL, &m, &err);
    CHECK(st == PX_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "falcon") && strstr(err.msg, "qwen3_moe") &&
                  strstr(err.msg, "deepseek_v3") && strstr(err.msg, "gpt2"),
              "%s", err.msg);
    CHECK(strcmp(err.file, path) == 0);

    /* A model folder reads its config.json: the same network as the file. */
    px_model folder;
    snprintf(path, sizeof path, "%s/tests/spec/hf/Qwen3-8B", data_source_root());
    px_error_clear(&err);
    CHECK_MSG(px_model_load(path, NULL, &folder, &err) == PX_OK, "%s", err.msg);
    if (load_hf("Qwen3-8B", &m, &err) == PX_OK)
        CHECK(total(&folder) == total(&m) && folder.n_layers == m.n_layers);

    /* A folder without config.json names the file it looked for. */
    char want[512];
    snprintf(want, sizeof want, "%s/config.json", data_tmp());
    px_error_clear(&err);
    CHECK(px_model_load(data_tmp(), NULL, &m, &err) == PX_ERR_NOT_FOUND);
    CHECK_MSG(strstr(err.msg, want) != NULL, "%s", err.msg);

    /* A missing required HF field is named. */
    char p2[512];
    data_write("config.json", "{\"model_type\": \"llama\", \"hidden_size\": 64,\n"
                              " \"num_attention_heads\": 4, \"intermediate_size\": 128,\n"
                              " \"vocab_size\": 256}\n",
               p2, sizeof p2);
    px_error_clear(&err);
    CHECK(px_model_load(p2, NULL, &m, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "num_hidden_layers") != NULL, "%s", err.msg);
    px_error_clear(&err);
    CHECK(px_model_load(data_tmp(), NULL, &m, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "num_hidden_layers") != NULL, "%s", err.msg);
    data_cleanup();
    return px_test_result("model_hf");
}
