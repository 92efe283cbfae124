/* test_row.c — the data README's row -> plan mapping (px_row.h) piece by
 * piece: every precision spelling of the shared files, the framework and
 * release names, the GPU profiles, the model config types, the layout
 * options, the compared quantity and its sign, the hardware copy, and that a
 * calibrated profile laid over with the row's values predicts what the
 * call's own profile does. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "px_row.h"
#include "px_test.h"

static void check_precisions(void)
{
    static const struct {
        const char *text;
        px_precision want;
    } cases[] = {
        {"bf16", PX_PREC_BF16},
        {"BF16", PX_PREC_BF16},
        {"amp_bf16", PX_PREC_BF16},
        {"fp16/bf16 mixed", PX_PREC_BF16},
        {"bf16 (assumed)", PX_PREC_BF16},
        {"fp16 mixed", PX_PREC_FP16},
        {"fp16 mixed (Adam state fp32)", PX_PREC_FP16},
        {"NVFP4", PX_PREC_NVFP4},
        {"MXFP8", PX_PREC_MXFP8},
        {"FP8-MX", PX_PREC_MXFP8},
        {"FP8-CS", PX_PREC_FP8_CS},
        {"float8 rowwise", PX_PREC_FP8_ROWWISE},
        {"FP8 alt. granularity (per 25.09 note)", PX_PREC_FP8_BLOCK},
        {"fp8 fine-grained", PX_PREC_FP8_BLOCK},
        {"FP8", PX_PREC_FP8},
        {"fp8", PX_PREC_FP8},
        {"amp_fp8", PX_PREC_FP8},
        {"float8 tensorwise", PX_PREC_FP8},
        {"float8 (torchao, nn.Linear)", PX_PREC_FP8},
        {"FP8 (unstated; 25.09 table)", PX_PREC_FP8},
        {"tf32", PX_PREC_BF16},
        {NULL, PX_PREC_BF16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_MSG(px_row_precision(cases[i].text) == cases[i].want, "\"%s\"",
                  cases[i].text ? cases[i].text : "(null)");
}

static void check_names(void)
{
    CHECK(!strcmp(px_row_framework("torchtitan + torch.compile"), "torchtitan"));
    CHECK(!strcmp(px_row_framework("NeMo AutoModel"), "torchtitan"));
    CHECK(!strcmp(px_row_framework("MosaicML Composer + PyTorch FSDP (llm-foundry)"),
                  "llm-foundry"));
    CHECK(!strcmp(px_row_framework("Metaseq (FSDP + Megatron TP)"), "llm-foundry"));
    CHECK(!strcmp(px_row_framework("Paxml (JAX)"), "maxtext"));
    CHECK(!strcmp(px_row_framework("Megatron-LM (PTD-P) vs DeepSpeed ZeRO-3"), "deepspeed"));
    CHECK(!strcmp(px_row_framework("Megatron-DeepSpeed"), "megatron"));
    CHECK(!strcmp(px_row_framework("llm.c (C/CUDA)"), "megatron"));
    char rel[32];
    px_row_release("Megatron-Bridge / NeMo 26.02 container", rel, sizeof rel);
    CHECK(!strcmp(rel, "nemo-26.02"));
    px_row_release("NeMo 24.03.01", rel, sizeof rel);
    CHECK(!strcmp(rel, "nemo-24.03"));
    px_row_release("Megatron-LM (2021)", rel, sizeof rel);
    CHECK(!strcmp(rel, "2021"));
    px_row_release("torchtitan (FSDP2), torch nightly 2024-12-23", rel, sizeof rel);
    CHECK(!strcmp(rel, "2024"));
    px_row_release("Megatron-Core r0.8.0", rel, sizeof rel);
    CHECK(rel[0] == '\0');
    px_row_release("x 12024", rel, sizeof rel); /* inside a longer number: none */
    CHECK(rel[0] == '\0');
    CHECK(!strcmp(px_row_hw_name("A100", 40), "a100-40g"));
    CHECK(!strcmp(px_row_hw_name("A100", 80), "a100-80g"));
    CHECK(!strcmp(px_row_hw_name("A800", 80), "a100-80g"));
    CHECK(!strcmp(px_row_hw_name("GB300", 288), "gb300-nvl72"));
    CHECK(!strcmp(px_row_hw_name("B300", 288), "b300"));
    CHECK(px_row_hw_name("MI300X", 192) == NULL);
}

static json_t *row_of(const char *text)
{
    json_error_t e;
    json_t *r = json_loads(text, 0, &e);
    CHECK_MSG(r != NULL, "%s", e.text);
    return r;
}

static void check_config_types(void)
{
    json_t *m = row_of("{\"layers\": 4, \"hidden\": 512, \"ffn\": 1376, \"heads\": 8,"
                       " \"seq_len\": 512, \"arch_notes\": \"head_dim 128\"}");
    bool vd = false;
    json_t *c = px_row_hf_config(m, &vd);
    CHECK(c && !strcmp(json_string_value(json_object_get(c, "model_type")), "llama"));
    CHECK(c && json_integer_value(json_object_get(c, "head_dim")) == 128);
    CHECK(vd && c && json_is_null(json_object_get(c, "vocab_size")));
    json_decref(c);
    json_decref(m);
    /* mapped, that row gets the loader's default (transformers' LlamaConfig)
     * and says so */
    json_t *row = row_of("{\"id\": \"t-llama\", \"framework\": \"Megatron-LM\", \"precision\": \"bf16\","
                         " \"model\": {\"layers\": 4, \"hidden\": 512, \"ffn\": 1376, \"heads\": 8,"
                         "  \"seq_len\": 512},"
                         " \"hardware\": {\"gpu\": \"H100\", \"num_gpus\": 8},"
                         " \"parallel\": {\"tp\": 1, \"pp\": 1, \"dp\": 8},"
                         " \"measured\": {\"mfu\": 0.4}}");
    px_row_call call;
    px_error err;
    px_error_clear(&err);
    CHECK_MSG(px_row_map(row, NULL, &call, &err) == PX_OK, "%s", err.msg);
    CHECK(call.model.vocab == 32000 && strstr(call.note, "vocabulary unpublished: 32000 assumed"));
    json_decref(row);
    m = row_of("{\"layers\": 4, \"hidden\": 512, \"ffn\": 2048, \"heads\": 8, \"seq_len\": 512,"
               " \"arch_notes\": \"GeLU\"}");
    c = px_row_hf_config(m, &vd);
    CHECK(c && !strcmp(json_string_value(json_object_get(c, "model_type")), "gpt2"));
    CHECK(vd && c && json_integer_value(json_object_get(c, "vocab_size")) == PX_ROW_VOCAB_GPT2);
    json_decref(c);
    json_decref(m);
    m = row_of("{\"layers\": 4, \"hidden\": 512, \"heads\": 8, \"vocab\": 1000, \"seq_len\": 512,"
               " \"arch_notes\": \"MLA\", \"moe\": {\"experts\": 8, \"top_k\": 2,"
               " \"expert_ffn\": 256, \"moe_layers\": 3}}");
    c = px_row_hf_config(m, &vd);
    CHECK(c && !strcmp(json_string_value(json_object_get(c, "model_type")), "deepseek_v3"));
    CHECK(!vd && c && json_integer_value(json_object_get(c, "first_k_dense_replace")) == 1);
    json_decref(c);
    json_decref(m);
}

static const char small_row[] =
    "{\"id\": \"t-small\", \"framework\": \"Megatron-LM (2022)\", \"precision\": \"fp16 mixed\","
    " \"notes\": \"an SFT run\","
    " \"model\": {\"layers\": 4, \"hidden\": 512, \"ffn\": 2048, \"heads\": 8, \"vocab\": 1024,"
    "  \"seq_len\": 512, \"arch_notes\": \"GPT\"},"
    " \"hardware\": {\"gpu\": \"H100\", \"num_gpus\": 16, \"gpus_per_node\": 4,"
    "  \"gpu_memory_gb\": 94},"
    " \"parallel\": {\"tp\": 2, \"pp\": 1, \"dp\": 8, \"vpp\": null, \"fsdp\": 4,"
    "  \"recompute\": \"selective (attention)\", \"micro_batch\": 2, \"global_batch\": 64},"
    " \"measured\": {\"tokens_per_sec_per_gpu\": null, \"mfu\": null, \"step_time_s\": 0.5}}";

static void check_call(void)
{
    json_t *row = row_of(small_row);
    px_row_call call;
    px_error err;
    px_error_clear(&err);
    CHECK(px_row_usable(row, NULL, 0));
    CHECK_MSG(px_row_map(row, NULL, &call, &err) == PX_OK, "%s", err.msg);
    CHECK(!strcmp(call.family, "t/H100") && !strcmp(call.hw_name, "h100-sxm"));
    CHECK(call.hw_derived && call.hw.hbm_bytes == (int64_t)94e9 && call.hw.gpus_per_node == 4);
    CHECK(call.tp == 2 && call.pp == 1 && call.dp == 8 && call.vpp == 0 && call.cp == 0);
    CHECK(call.zero == 3 && call.shard_group == 4 && call.recompute == PX_RECOMPUTE_SELECTIVE);
    CHECK(call.precision == PX_PREC_FP16 && !strcmp(call.framework, "megatron"));
    CHECK(!strcmp(call.release, "2022") && !strcmp(call.finetune, "full"));
    CHECK(strstr(call.note, "finetune") == NULL); /* passed as --finetune full, not noted */
    CHECK(call.on == PX_ROW_ON_STEP && call.measured == 0.5);
    char args[1024];
    px_row_plan_args(&call, args, sizeof args);
    CHECK_MSG(strstr(args, "--shard-group 4") && strstr(args, "--zero 3") &&
                  strstr(args, "--framework-release 2022") && strstr(args, "--precision fp16") &&
                  strstr(args, "--finetune full"),
              "%s", args);

    px_row_result res;
    CHECK_MSG(px_row_predict(&call, NULL, NULL, &res, &err) == PX_OK, "%s", err.msg);
    /* step time: + = predicted too fast, meas / pred - 1 */
    CHECK(res.predicted > 0);
    CHECK_CLOSE(res.err, 0.5 / res.predicted - 1.0, 1e-12, 0);
    CHECK(res.best.par.tp == 2 && res.best.par.dp == 8 && res.best.par.zero == 3);

    /* the named profile laid over with the row's values is the call's */
    px_hw base, over;
    CHECK(px_hw_load("h100-sxm", NULL, &base, &err) == PX_OK);
    CHECK(px_row_hw_for(&call, &base, &over, &err) == PX_OK);
    CHECK(over.hbm_bytes == call.hw.hbm_bytes && over.gpus_per_node == call.hw.gpus_per_node);
    px_row_result res2;
    CHECK(px_row_predict(&call, &over, NULL, &res2, &err) == PX_OK);
    CHECK_CLOSE(res2.predicted, res.predicted, 1e-12, 0);

    /* Megatron-LM's 2021 release had no selective recompute: the planner's
     * refusal, naming the capability */
    snprintf(call.release, sizeof call.release, "2021");
    CHECK(px_row_predict(&call, NULL, NULL, &res2, &err) != PX_OK);
    CHECK_MSG(strstr(err.msg, "capability recompute") != NULL, "%s", err.msg);

    /* a row without tp is not mapped, naming the field */
    json_object_set_new(json_object_get(row, "parallel"), "tp", json_null());
    CHECK(!px_row_usable(row, NULL, 0));
    CHECK(px_row_map(row, NULL, &call, &err) == PX_ERR_INVALID);
    CHECK(strstr(err.msg, "tp, pp and dp") != NULL);
    json_decref(row);
}

int main(void)
{
    check_precisions();
    check_names();
    check_config_types();
    check_call();
    return px_test_result("row");
}
