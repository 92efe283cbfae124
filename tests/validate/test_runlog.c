/* Training logs as published-runs rows (px_runlog.h): short samples written
 * here in the formats Megatron-LM (arguments block, iteration lines) and
 * torchtitan (TOML config, model arguments, mesh and step lines) print; the
 * row's model, layout, batch and measurement; bad logs refused naming the
 * file and what is missing. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "px_runlog.h"
#include "px_row.h"
#include "px_test.h"

static char dir[] = "/tmp/px_runlog_XXXXXX";

static const char *write_file(const char *name, const char *text)
{
    static char path[8][512];
    static int k = 0;
    char *p = path[k++ % 8];
    snprintf(p, 512, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return p;
}

/* One "  name ..... value" line the way _print_args pads it (48 - len dots). */
static void arg(char *buf, size_t n, const char *name, const char *value)
{
    char dots[64];
    int d = 48 - (int)strlen(name);
    memset(dots, '.', (size_t)(d > 0 ? d : 0));
    dots[d > 0 ? d : 0] = '\0';
    size_t u = strlen(buf);
    snprintf(buf + u, n - u, "  %s %s %s\n", name, dots, value);
}

static void megatron_log(char *buf, size_t n, bool with_iterations)
{
    buf[0] = '\0';
    snprintf(buf, n, "using world size: 64, data-parallel size: 4, tensor-model-parallel size: 8\n"
                     "------------------------ arguments ------------------------\n");
    static const char *const kv[][2] = {
        {"bf16", "True"}, {"context_parallel_size", "1"}, {"ffn_hidden_size", "28672"},
        {"fp16", "False"}, {"fp8", "None"}, {"global_batch_size", "128"},
        {"group_query_attention", "True"}, {"hidden_size", "8192"}, {"kv_channels", "128"},
        {"micro_batch_size", "1"}, {"num_attention_heads", "64"}, {"num_experts", "None"},
        {"num_layers", "80"}, {"num_query_groups", "8"}, {"padded_vocab_size", "128256"},
        {"pipeline_model_parallel_size", "2"}, {"recompute_granularity", "None"},
        {"seq_length", "8192"}, {"sequence_parallel", "True"}, {"swiglu", "True"},
        {"tensor_model_parallel_size", "8"}, {"use_distributed_optimizer", "True"},
        {"virtual_pipeline_model_parallel_size", "None"}, {"world_size", "64"},
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        arg(buf, n, kv[i][0], kv[i][1]);
    size_t u = strlen(buf);
    snprintf(buf + u, n - u, "-------------------- end of arguments ---------------------\n");
    if (!with_iterations)
        return;
    const double ms[] = {14210.5, 9120.0, 9080.0, 9100.0, 9140.0};
    for (int i = 0; i < 5; i++) {
        u = strlen(buf);
        snprintf(buf + u, n - u,
                 " [2026-01-01 10:00:%02d] iteration %8d/%8d | consumed samples: %12d | "
                 "elapsed time per iteration (ms): %.1f | learning rate: 1.500000E-04 | global "
                 "batch size:   128 | lm loss: 8.123456E+00 | loss scale: 1.0 | grad norm: 1.234 "
                 "| number of skipped iterations:   0 | number of nan iterations:   0 |\n",
                 i, 10 * (i + 1), 1000, 1280 * (i + 1), ms[i]);
    }
}

static double num(json_t *o, const char *a, const char *b)
{
    return json_number_value(json_object_get(json_object_get(o, a), b));
}

static void test_megatron(void)
{
    static char buf[16384];
    megatron_log(buf, sizeof buf, true);
    const char *p = write_file("megatron.log", buf);
    px_runlog_opts o = {.gpu_default = "H100", .gpus_per_node = 8};
    json_t *row = NULL;
    px_error err;
    CHECK(px_runlog_row(p, NULL, &o, &row, &err) == PX_OK);
    if (!row)
        return;
    CHECK(num(row, "model", "layers") == 80 && num(row, "model", "hidden") == 8192);
    CHECK(num(row, "model", "ffn") == 28672 && num(row, "model", "kv_heads") == 8);
    CHECK(num(row, "model", "vocab") == 128256 && num(row, "model", "seq_len") == 8192);
    CHECK(num(row, "parallel", "tp") == 8 && num(row, "parallel", "pp") == 2);
    CHECK(num(row, "parallel", "dp") == 4 && num(row, "parallel", "global_batch") == 128);
    CHECK(num(row, "parallel", "zero_stage") == 1);
    CHECK(num(row, "hardware", "num_gpus") == 64);
    /* median of the iterations after the first: 9100 and 9120 -> 9.11 s */
    CHECK_CLOSE(num(row, "measured", "step_time_s"), 9.11, 1e-12, 0);
    CHECK_CLOSE(num(row, "measured", "tokens_per_sec_per_gpu"), 128.0 * 8192 / 9.11 / 64, 1e-12,
                0);
    char why[256];
    CHECK(px_row_usable(row, why, sizeof why));
    json_decref(row);
    /* the same log without iteration lines */
    megatron_log(buf, sizeof buf, false);
    p = write_file("no-iterations.log", buf);
    CHECK(px_runlog_row(p, NULL, &o, &row, &err) == PX_ERR_INVALID);
    CHECK(strstr(err.file, "no-iterations.log") && strstr(err.msg, "iteration lines"));
    /* and without its number of layers */
    megatron_log(buf, sizeof buf, true);
    char *l = strstr(buf, "  num_layers ");
    l[2] = 'X';
    p = write_file("no-layers.log", buf);
    CHECK(px_runlog_row(p, NULL, &o, &row, &err) == PX_ERR_INVALID && strstr(err.msg, "num_layers"));
}

static const char *const titan_toml =
    "[job]\n"
    "description = \"Llama 3 8B training\"\n"
    "\n"
    "[model]\n"
    "name = \"llama3\"\n"
    "flavor = \"8B\"\n"
    "\n"
    "[training]\n"
    "local_batch_size = 1\n"
    "seq_len = 8192\n"
    "steps = 100\n"
    "\n"
    "[parallelism]\n"
    "data_parallel_replicate_degree = 1\n"
    "data_parallel_shard_degree = -1  # the rest\n"
    "tensor_parallel_degree = 2\n"
    "pipeline_parallel_degree = 1\n"
    "\n"
    "[activation_checkpoint]\n"
    "mode = \"selective\"\n";

static void titan_log(char *buf, size_t n, int steps)
{
    snprintf(buf, n,
             "[rank0]:[titan] 2026-01-01 10:00:00,000 - root - INFO - Starting job: Llama 3 8B training\n"
             "[rank0]:[titan] 2026-01-01 10:00:01,000 - root - INFO - Building 2-D device mesh with ['dp_shard', 'tp'], [32, 2]\n"
             "[rank0]:[titan] 2026-01-01 10:00:02,000 - root - INFO - CUDA capacity: NVIDIA H100 80GB HBM3 with 79.11GiB memory\n"
             "[rank0]:[titan] 2026-01-01 10:00:03,000 - root - INFO - Building llama3 8B with TransformerModelArgs(dim=4096, n_layers=32, n_heads=32, n_kv_heads=8, vocab_size=128256, multiple_of=1024, ffn_dim_multiplier=1.3, norm_eps=1e-05, rope_theta=500000, max_seq_len=8192, depth_init=True)\n");
    const int tps[] = {2104, 6811, 6790, 6805, 6830};
    for (int i = 0; i < steps; i++) {
        size_t u = strlen(buf);
        snprintf(buf + u, n - u,
                 "[rank0]:[titan] 2026-01-01 10:01:%02d,000 - root - INFO - \033[31mstep: %2d  "
                 "\033[32mloss:  7.1234  \033[33mmemory: 61.20GiB(77.36%%)  \033[34mtps: %d,%03d  "
                 "\033[36mtflops: 394.12  \033[35mmfu: %.2f%%\033[39m\n",
                 i, 10 * (i + 1), tps[i] / 1000, tps[i] % 1000, 39.85 * tps[i] / 6800.0);
    }
}

static void test_torchtitan(void)
{
    static char buf[8192];
    titan_log(buf, sizeof buf, 5);
    const char *log = write_file("titan.log", buf);
    const char *cfg = write_file("llama3_8b.toml", titan_toml);
    px_runlog_opts o = {0};
    json_t *row = NULL;
    px_error err;
    CHECK(px_runlog_row(log, cfg, &o, &row, &err) == PX_OK);
    if (!row)
        return;
    CHECK(num(row, "model", "layers") == 32 && num(row, "model", "hidden") == 4096);
    CHECK(num(row, "model", "ffn") == 14336); /* Llama 3 8B's FFN from its multipliers */
    CHECK(num(row, "model", "kv_heads") == 8 && num(row, "model", "seq_len") == 8192);
    CHECK(num(row, "parallel", "tp") == 2 && num(row, "parallel", "dp") == 32);
    CHECK(num(row, "parallel", "global_batch") == 32);
    CHECK(json_is_true(json_object_get(json_object_get(row, "parallel"), "fsdp")));
    CHECK(num(row, "hardware", "num_gpus") == 64);
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(row, "hardware"), "gpu")),
                  "H100"));
    /* median of the steps after the first: 6805 and 6811 -> 6808 */
    CHECK_CLOSE(num(row, "measured", "tokens_per_sec_per_gpu"), 6808.0, 1e-12, 0);
    CHECK(px_row_usable(row, NULL, 0));
    json_decref(row);
    /* the TOML echoed in the log instead of given alongside */
    static char both[16384];
    snprintf(both, sizeof both, "%s%s", titan_toml, buf);
    log = write_file("titan-echo.log", both);
    CHECK(px_runlog_row(log, NULL, &o, &row, &err) == PX_OK);
    json_decref(row);
    /* no step lines */
    titan_log(buf, sizeof buf, 0);
    log = write_file("titan-nosteps.log", buf);
    CHECK(px_runlog_row(log, cfg, &o, &row, &err) == PX_ERR_INVALID &&
          strstr(err.msg, "step lines") && strstr(err.file, "titan-nosteps.log"));
    /* neither format */
    log = write_file("other.log", "hello\nworld\n");
    CHECK(px_runlog_row(log, NULL, &o, &row, &err) == PX_ERR_INVALID &&
          strstr(err.msg, "neither"));
    CHECK(px_runlog_row("/nonexistent/x.log", NULL, &o, &row, &err) == PX_ERR_IO);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_megatron();
    test_torchtitan();
    return px_test_result("test_runlog");
}
