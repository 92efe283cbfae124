/* px_mkplan — writes a plan JSON for the executor tests with px_plan_write,
 * every dimension given on the command line, so the tests never carry
 * hand-written plans that go stale:
 *   px_mkplan --model tiny-llama [--layers N] [--vocab N] [--mtp D] [--tp N] [--cp N]
 *             [--pp N] [--vpp N] [--dp N] [--ep N] [--etp N] [--sp] [--zero N] [--schedule S] [--recompute R]
 *             [--layer-recompute r,r,...] [--chunks n,n,...] [--micro-batch N]
 *             [--n-micro N] [--seq N] [--no-flash] [--hw NAME]
 *             [--finetune none|full|lora] [--lora-rank R] [--lora-alpha A]
 *             [--lora-targets qkv,proj,fc1,fc2] [--offload optimizer|params|activations,...]
 *             [--offload-fraction F] -o plan.json
 * The prediction comes from the cost model (px_cost_evaluate) when it
 * accepts the configuration, else it stays zero.  Without --hw the profile
 * is a small fp32 CPU one (dtype_bytes 4). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_cost.h"
#include "px_plan_predict.h"
#include "px_hw.h"
#include "px_model.h"
#include "px_plan.h"

static void cpu_profile(px_hw *hw)
{
    px_hw_init(hw);
    snprintf(hw->name, sizeof hw->name, "%s", "cpu-test");
    snprintf(hw->description, sizeof hw->description, "%s",
             "fp32 CPU ranks for the executor tests (px_mkplan)");
    hw->peak_flops = 5e10;
    hw->hbm_bytes = INT64_C(16000000000);
    hw->hbm_bw = 1e10;
    hw->mem_reserve_bytes = 0;
    hw->dtype_bytes = 4;
    hw->gpus_per_node = 8;
    hw->intra_bw = 5e9;
    hw->intra_lat_s = 2e-6;
    hw->inter_bw = 1e9;
    hw->inter_lat_s = 1e-5;
    hw->host_link_bw = 5e9; /* for optimizer offload plans */
    hw->host_mem_bytes = INT64_C(16000000000);
    hw->host_mem_bw = 1e10;
}

static int int_list(const char *s, int *out, int max, int *n)
{
    *n = 0;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n >= max)
            return -1;
        out[(*n)++] = atoi(t);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *model = "tiny-llama", *out = NULL, *hw_name = NULL, *lrc = NULL;
    int64_t layers = 0, vocab = 0, mtp = -1;
    px_parallel par;
    px_parallel_init(&par);
    px_error err;
    px_error_clear(&err);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV                                                                            \
    if (!v) {                                                                            \
        fprintf(stderr, "px_mkplan: %s needs a value\n", a);                             \
        return 2;                                                                        \
    }                                                                                    \
    i++;
        if (!strcmp(a, "--sp")) {
            par.sp = true;
        } else if (!strcmp(a, "--no-flash")) {
            par.flash_attention = false;
        } else if (!strcmp(a, "--model")) {
            NEEDV model = v;
        } else if (!strcmp(a, "-o")) {
            NEEDV out = v;
        } else if (!strcmp(a, "--hw")) {
            NEEDV hw_name = v;
        } else if (!strcmp(a, "--layers")) {
            NEEDV layers = atoll(v);
        } else if (!strcmp(a, "--vocab")) {
            NEEDV vocab = atoll(v);
        } else if (!strcmp(a, "--mtp")) {
            NEEDV mtp = atoll(v);
        } else if (!strcmp(a, "--tp")) {
            NEEDV par.tp = atoi(v);
        } else if (!strcmp(a, "--cp")) {
            NEEDV par.cp = atoi(v);
        } else if (!strcmp(a, "--pp")) {
            NEEDV par.pp = atoi(v);
        } else if (!strcmp(a, "--vpp")) {
            NEEDV par.vpp = atoi(v);
        } else if (!strcmp(a, "--ep")) {
            NEEDV par.ep = atoi(v);
        } else if (!strcmp(a, "--etp")) {
            NEEDV par.etp = atoi(v);
        } else if (!strcmp(a, "--dp")) {
            NEEDV par.dp = atoi(v);
        } else if (!strcmp(a, "--zero")) {
            NEEDV par.zero = atoi(v);
        } else if (!strcmp(a, "--micro-batch")) {
            NEEDV par.micro_batch = atoll(v);
        } else if (!strcmp(a, "--n-micro")) {
            NEEDV par.n_micro = atoll(v);
        } else if (!strcmp(a, "--seq")) {
            NEEDV par.seq_len = atoll(v);
        } else if (!strcmp(a, "--schedule")) {
            NEEDV if (px_schedule_parse(v, &par.schedule, &err)) {
                fprintf(stderr, "px_mkplan: %s\n", err.msg);
                return 2;
            }
        } else if (!strcmp(a, "--recompute")) {
            NEEDV if (px_recompute_parse(v, &par.recompute, &err)) {
                fprintf(stderr, "px_mkplan: %s\n", err.msg);
                return 2;
            }
        } else if (!strcmp(a, "--finetune")) {
            NEEDV if (px_finetune_mode_parse(v, &par.finetune.mode, &err)) {
                fprintf(stderr, "px_mkplan: %s\n", err.msg);
                return 2;
            }
        } else if (!strncmp(a, "--lora-", 7)) {
            NEEDV if (px_lora_set(&par.finetune, a + 7, v, &err)) {
                fprintf(stderr, "px_mkplan: %s: %s\n", a, err.msg);
                return 2;
            }
        } else if (!strcmp(a, "--offload")) {
            NEEDV if (px_offload_parse_list(v, &par.offload, &err)) {
                fprintf(stderr, "px_mkplan: --offload: %s\n", err.msg);
                return 2;
            }
        } else if (!strcmp(a, "--offload-fraction")) {
            NEEDV par.offload.fraction = atof(v);
        } else if (!strcmp(a, "--layer-recompute")) {
            NEEDV lrc = v;
        } else if (!strcmp(a, "--chunks")) {
            NEEDV if (int_list(v, par.layers_per_chunk, PX_MAX_CHUNKS, &par.n_chunks)) {
                fprintf(stderr, "px_mkplan: too many chunks\n");
                return 2;
            }
        } else {
            fprintf(stderr, "px_mkplan: unknown option %s\n", a);
            return 2;
        }
    }
    if (!out) {
        fprintf(stderr, "px_mkplan: -o FILE is required\n");
        return 2;
    }
    px_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.version = PX_PLAN_VERSION;
    if (px_model_load(model, NULL, &plan.model, &err)) {
        fprintf(stderr, "px_mkplan: model %s: %s\n", model, err.msg);
        return 1;
    }
    if (layers > 0)
        plan.model.n_layers = layers;
    if (vocab > 0)
        plan.model.vocab = vocab;
    if (mtp >= 0)
        plan.model.n_mtp_modules = mtp;
    if (lrc) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s", lrc);
        par.n_layer_recompute = 0;
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
             t = strtok_r(NULL, ",", &save)) {
            px_recompute r;
            if (px_recompute_parse(t, &r, &err) || par.n_layer_recompute >= PX_MAX_LAYERS) {
                fprintf(stderr, "px_mkplan: --layer-recompute: %s\n", err.msg);
                return 2;
            }
            par.layer_recompute[par.n_layer_recompute++] = (unsigned char)r;
        }
    }
    if (hw_name) {
        if (px_hw_load(hw_name, NULL, &plan.hw, &err)) {
            fprintf(stderr, "px_mkplan: hw %s: %s\n", hw_name, err.msg);
            return 1;
        }
    } else {
        cpu_profile(&plan.hw);
    }
    plan.par = par;
    px_error cerr;
    px_error_clear(&cerr);
    if (px_cost_evaluate(&plan.model, &plan.hw, &plan.par, &plan.pred, &cerr) != PX_OK ||
        px_plan_predict(&plan, NULL, &cerr) != PX_OK) {
        memset(&plan.pred, 0, sizeof plan.pred);
        plan.n_stages = 0;
        memset(&plan.class_time, 0, sizeof plan.class_time);
        fprintf(stderr, "px_mkplan: note: no prediction (%s)\n", cerr.msg);
    }
    if (px_plan_write(&plan, out, &err)) {
        fprintf(stderr, "px_mkplan: %s\n", err.msg);
        return 1;
    }
    return 0;
}
