/* test_sliding.c — sliding-window attention: reading `sliding_window` and
 * `layer_types` (presets, Hugging Face configs, the model inside a plan),
 * their errors, and the attention FLOPs under both conventions against
 * closed forms. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "px_cost.h"
#include "px_flops.h"
#include "px_plan_json.h"
#include "px_sliding.h"
#include "px_test.h"

static char dir[64];

static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return NULL;
    fputs(text, f);
    fclose(f);
    return path;
}

/* A gpt-oss-like config: 4 layers alternating sliding / full, window 128. */
static const char *gpt_oss =
    "{\"model_type\": \"gpt_oss\", \"hidden_size\": 256, \"num_hidden_layers\": 4,"
    " \"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"head_dim\": 64,"
    " \"intermediate_size\": 256, \"vocab_size\": 1000, \"num_local_experts\": 8,"
    " \"num_experts_per_tok\": 2, \"max_position_embeddings\": 4096,"
    " \"sliding_window\": 128, \"layer_types\": [\"sliding_attention\", \"full_attention\","
    " \"sliding_attention\", \"full_attention\"]}";

static void test_read(void)
{
    px_model m;
    px_error err = {0};
    const char *p = write_file("gpt-oss/config.json", gpt_oss);
    CHECK(p && px_model_load(p, NULL, &m, &err) == PX_OK);
    CHECK(m.sliding_window == 128 && px_model_n_sliding_layers(&m) == 2);
    CHECK(px_model_layer_is_sliding(&m, 0) && !px_model_layer_is_sliding(&m, 1));
    CHECK(m.n_experts == 8 && m.moe_ffn == 256 && m.qkv_bias);
    /* the model inside a plan keeps its layer kinds */
    json_t *j = NULL;
    CHECK(px_model_to_json(&m, &j, &err) == PX_OK);
    px_model back;
    CHECK(px_model_from_json(j, "plan.json", "model", &back, &err) == PX_OK);
    CHECK(back.sliding_window == 128 && memcmp(back.layer_sliding, m.layer_sliding,
                                               sizeof m.layer_sliding) == 0);
    json_decref(j);
    /* Mistral 7B v0.1: a 4096 window on every layer */
    CHECK(px_model_load(PX_SOURCE_ROOT "/tests/spec/hf/Mistral-7B-v0.1/config.json", NULL, &m,
                        &err) == PX_OK);
    CHECK(m.sliding_window == 4096 && px_model_n_sliding_layers(&m) == m.n_layers);
    /* errors name the key and what is allowed */
    char bad[1024];
    snprintf(bad, sizeof bad, "%s", gpt_oss);
    char *at = strstr(bad, "\"full_attention\"");
    memcpy(at, "\"full_attentiox\"", 16);
    p = write_file("bad_types.json", bad);
    CHECK(px_model_load(p, NULL, &m, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "layer_types[1]") && strstr(err.msg, "\"sliding_attention\""),
              "%s", err.msg);
    p = write_file("short_types.json",
                   "{\"name\": \"x\", \"block\": \"llama\", \"hidden\": 64, \"n_layers\": 3,"
                   " \"n_heads\": 4, \"ffn\": 128, \"vocab\": 100, \"seq_len\": 64,"
                   " \"sliding_window\": 16, \"layer_types\": [\"full_attention\"]}");
    CHECK(px_model_load(p, NULL, &m, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "layer_types") && strstr(err.msg, "3 strings"), "%s", err.msg);
    p = write_file("no_window.json",
                   "{\"name\": \"x\", \"block\": \"llama\", \"hidden\": 64, \"n_layers\": 1,"
                   " \"n_heads\": 4, \"ffn\": 128, \"vocab\": 100, \"seq_len\": 64,"
                   " \"layer_types\": [\"sliding_attention\"]}");
    CHECK(px_model_load(p, NULL, &m, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "sliding_window"), "%s", err.msg);
}

/* Attention FLOPs per token: a sliding layer's band w·s (mfu convention),
 * w − w(w − 1)/(2s) keys as executed; full layers s and (s + 1)/2. */
static void test_flops(void)
{
    px_model m;
    px_error err = {0};
    const char *p = write_file("gpt-oss2/config.json", gpt_oss);
    CHECK(px_model_load(p, NULL, &m, &err) == PX_OK);
    int64_t s = 4096;
    double w = 128, a = (double)m.n_heads, d = 64;
    px_model full = m;
    full.sliding_window = 0;
    memset(full.layer_sliding, 0, sizeof full.layer_sliding);
    /* two sliding layers of four: the convention's core drops by 2·12·a·d·(s − w) */
    CHECK_CLOSE(px_flops_model_per_token(&full, s) - px_flops_model_per_token(&m, s),
                2.0 * 12.0 * a * d * ((double)s - w), 1e-12, 0);
    double exec_sliding = w - w * (w - 1.0) / (2.0 * (double)s);
    CHECK_CLOSE(px_flops_model_causal_per_token(&full, s) -
                    px_flops_model_causal_per_token(&m, s),
                2.0 * 12.0 * a * d * (0.5 * ((double)s + 1.0) - exec_sliding), 1e-12, 0);
    /* brute force of the executed keys: mean over positions of min(i+1, w) */
    double sum = 0.0;
    for (int64_t i = 0; i < s; i++)
        sum += (double)(i + 1 < 128 ? i + 1 : 128);
    CHECK_CLOSE(px_sliding_keys_causal(&m, 0, s), sum / (double)s, 1e-12, 0);
    /* a window longer than the sequence changes nothing */
    CHECK_CLOSE(px_sliding_keys_causal(&m, 0, 64), 32.5, 1e-12, 0);
    CHECK_CLOSE(px_sliding_causal_fraction(&m, 64), 1.0, 1e-12, 0);
    /* the cost model charges the sliding layers their band */
    px_hw hw;
    CHECK(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK);
    px_parallel par;
    px_parallel_init(&par);
    par.seq_len = 32768;
    px_prediction pf, ps;
    CHECK(px_cost_evaluate(&full, &hw, &par, &pf, &err) == PX_OK);
    CHECK(px_cost_evaluate(&m, &hw, &par, &ps, &err) == PX_OK);
    CHECK(ps.time.step_s < pf.time.step_s);
    CHECK(ps.mfu_causal <= ps.mfu);
}

static void remove_tree(void)
{
    static const char *const files[] = {"gpt-oss/config.json", "gpt-oss2/config.json",
                                        "bad_types.json", "short_types.json",
                                        "no_window.json", "gpt-oss2", "gpt-oss", NULL};
    char path[256];
    for (int i = 0; files[i]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        remove(path);
    }
    rmdir(dir);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/px_sliding_XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    char sub[128];
    snprintf(sub, sizeof sub, "%s/gpt-oss", dir);
    mkdir(sub, 0700);
    snprintf(sub, sizeof sub, "%s/gpt-oss2", dir);
    mkdir(sub, 0700);
    test_read();
    test_flops();
    remove_tree();
    return px_test_result("test_sliding");
}
