/* test_model.c — presets load and validate, parameter counts match the
 * published totals (and the tiny models a hand formula), the count's parts
 * add up, and the per-layer functions agree with the totals. */
#include <string.h>

#include "data_util.h"
#include "px_model.h"
#include "px_sliding.h"
#include "px_test.h"

/* The parts of px_param_count add up, and the per-layer function agrees. */
static void check_consistent(const px_model *m)
{
    px_param_count c;
    px_model_count_params(m, &c);
    int64_t layers = 0;
    for (int64_t i = 0; i < m->n_layers; i++)
        layers += px_model_layer_params(m, i);
    CHECK_MSG(layers == c.attention + c.dense_mlp + c.expert_mlp + c.shared_expert_mlp +
                            c.router + c.norms + c.mamba,
              "%s: layer sum", m->name);
    CHECK_MSG(c.total == layers + c.embedding + c.lm_head + c.final_norm, "%s: total", m->name);
    CHECK_MSG(c.active <= c.total && c.active > 0, "%s: active", m->name);
    if (m->n_experts == 0)
        CHECK_MSG(c.active == c.total, "%s: dense active == total", m->name);
    /* matmul params: all experts >= active experts; dense layers equal */
    for (int64_t i = 0; i < m->n_layers; i++) {
        int64_t all = px_model_layer_matmul_params(m, i, false);
        int64_t act = px_model_layer_matmul_params(m, i, true);
        CHECK(all >= act && act > 0 && all <= px_model_layer_params(m, i));
        if (!px_model_layer_is_moe(m, i))
            CHECK(all == act);
    }
    px_error err;
    CHECK_MSG(px_model_validate(m, &err) == PX_OK, "%s validates", m->name);
}

static void check_published(const char *name, double total, double rtol_total, double active,
                            double rtol_active)
{
    px_model m = data_load_model(name);
    px_param_count c;
    px_model_count_params(&m, &c);
    fprintf(stderr, "%-16s total %.4f B active %.4f B mtp %.3f B\n", name, c.total / 1e9,
            c.active / 1e9, c.mtp / 1e9);
    CHECK_CLOSE(c.total, total, rtol_total, 0);
    CHECK_CLOSE(c.active, active, rtol_active, 0);
    check_consistent(&m);
}

int main(void)
{
    /* Published totals: Llama 3 paper / HF model cards, GPT-3 paper,
     * Mixtral paper, DeepSeek-V3 report, Qwen3 report. */
    check_published("llama3-8b", 8.03e9, 0.001, 8.03e9, 0.001);
    check_published("llama3-70b", 70.55e9, 0.001, 70.55e9, 0.001);
    check_published("llama3-405b", 405.85e9, 0.001, 405.85e9, 0.001);
    check_published("gpt3-175b", 174.6e9, 0.005, 174.6e9, 0.005);
    check_published("mixtral-8x7b", 46.70e9, 0.002, 12.9e9, 0.01);
    check_published("deepseek-v3", 671e9, 0.005, 37e9, 0.015);
    check_published("qwen3-235b-a22b", 235e9, 0.01, 22e9, 0.01);
    /* gpt-oss model card, table 1: 116.83 B / 20.91 B in total; its active
     * 5.13 B / 3.61 B leave out the embedding table (201088 x 2880 = 0.58 B),
     * which the count here includes. */
    check_published("gpt-oss-120b", 116.83e9, 0.002, 5.13e9 + 201088.0 * 2880, 0.005);
    check_published("gpt-oss-20b", 20.91e9, 0.002, 3.61e9 + 201088.0 * 2880, 0.005);

    /* 70.6 B for Llama 3 70B (the lecture's count). */
    px_model l70 = data_load_model("70b");
    CHECK(strcmp(l70.name, "llama3-70b") == 0);
    px_param_count c;
    px_model_count_params(&l70, &c);
    CHECK_CLOSE(c.total, 70.6e9, 0.001, 0);
    CHECK(px_model_qk_head_dim(&l70) == 128 && px_model_v_head_dim(&l70) == 128);

    /* DeepSeek-V3: 685 B in the checkpoint with the MTP module. */
    px_model ds = data_load_model("deepseek-v3");
    px_model_count_params(&ds, &c);
    CHECK_CLOSE(c.total + c.mtp, 685e9, 0.01, 0);
    CHECK(px_model_qk_head_dim(&ds) == 192 && px_model_v_head_dim(&ds) == 128);
    CHECK(!px_model_layer_is_moe(&ds, 2) && px_model_layer_is_moe(&ds, 3));
    CHECK(c.shared_expert_mlp == 58 * 3 * 7168 * (int64_t)2048);

    /* Qwen3: head_dim 128 although h/a = 64; q/k norms of head_dim each. */
    px_model q3 = data_load_model("qwen3-235b-a22b");
    CHECK(q3.head_dim == 128 && q3.qk_norm);
    CHECK(px_model_layer_params(&q3, 0) ==
          2 * 4096 + 4096 * 64 * 128 * 2 + 2 * 4096 * 4 * 128 + 2 * 128 + 4096 * 128 +
              128 * 3 * 4096 * (int64_t)1536);

    /* gpt-oss: sliding-window attention on every other layer, the first sliding. */
    px_model oss = data_load_model("gpt-oss-120b");
    CHECK(oss.sliding_window == 128 && oss.attention_sinks && oss.qkv_bias && oss.o_bias);
    CHECK(px_model_layer_is_sliding(&oss, 0) && !px_model_layer_is_sliding(&oss, 1) &&
          px_model_layer_is_sliding(&oss, 34) && !px_model_layer_is_sliding(&oss, 35));
    CHECK(px_model_n_sliding_layers(&oss) == 18);

    /* The lecture's model: 12 L h^2 = 64.4e9 in its layers, 1.05e9 per embedding. */
    px_model seed = data_load_model("seed-70b");
    px_model_count_params(&seed, &c);
    CHECK_CLOSE((double)(c.attention + c.dense_mlp), 64.4e9, 0.002, 0);
    CHECK_CLOSE((double)c.lm_head, 1.05e9, 0.002, 0);
    CHECK(seed.ffn == 4 * seed.hidden && seed.n_kv_heads == seed.n_heads);
    check_consistent(&seed);

    /* Tiny models, by hand formula. */
    {
        px_model m = data_load_model("tiny-llama");
        const int64_t h = m.hidden, L = m.n_layers, V = m.vocab, f = m.ffn;
        const int64_t d = h / m.n_heads, k = m.n_kv_heads;
        CHECK(k == 2 && m.n_heads == 4);
        int64_t layer = 2 * h * h + 2 * h * k * d + 3 * h * f + 2 * h;
        px_model_count_params(&m, &c);
        CHECK(c.total == L * layer + 2 * V * h + h);
        check_consistent(&m);
    }
    {
        px_model m = data_load_model("tiny-gpt");
        const int64_t h = m.hidden, L = m.n_layers, V = m.vocab, P = m.max_positions;
        CHECK(m.ffn == 4 * h && m.tied_embeddings);
        px_model_count_params(&m, &c);
        CHECK(c.total == L * (12 * h * h + 13 * h) + V * h + P * h + 2 * h);
        check_consistent(&m);
    }
    {
        px_model m = data_load_model("tiny-moe");
        const int64_t h = m.hidden, L = m.n_layers, V = m.vocab, f = m.ffn, e = m.moe_ffn;
        const int64_t E = m.n_experts, r = m.top_k, D = m.first_dense_layers;
        int64_t attn = 4 * h * h, norms = 2 * h;
        int64_t dense = attn + 3 * h * f + norms;
        int64_t moe = attn + h * E + E * 3 * h * e + norms;
        px_model_count_params(&m, &c);
        CHECK(c.total == D * dense + (L - D) * moe + 2 * V * h + h);
        CHECK(c.active == c.total - (L - D) * (E - r) * 3 * h * e);
        check_consistent(&m);
    }

    /* The preset list names every preset and the aliases. */
    char list[4096];
    px_model_list_presets(NULL, list, sizeof list);
    static const char *const all[] = {"llama3-8b", "llama3-70b", "70b", "llama3-405b",
                                      "gpt3-175b", "seed-70b", "mixtral-8x7b", "deepseek-v3",
                                      "qwen3-235b-a22b", "tiny-llama", "tiny-gpt", "tiny-moe",
                                      "tiny-qwen3", "gpt-oss-120b", "gpt-oss", "gpt-oss-20b",
                                      "nemotron-h-8b", "nemotron-h", "nemotron-h-56b",
                                      "nemotron-3-nano-30b-a3b", "nemotron-3-nano"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        CHECK_MSG(strstr(list, all[i]) != NULL, "list lacks %s: %s", all[i], list);
        px_model m = data_load_model(all[i]);
        check_consistent(&m);
    }
    return px_test_result("model");
}
