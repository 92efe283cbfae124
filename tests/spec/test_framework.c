/* test_framework.c — every framework profile loads with the capabilities its
 * sources state; bad profiles give errors naming the file, the field and the
 * allowed values; the search under a profile scores only what the framework
 * runs, and a fixed dimension it cannot run is an error naming the
 * capability. */
#include <stdlib.h>
#include <string.h>

#include "data_util.h"
#include "px_framework.h"
#include "px_release.h"
#include "px_search.h"
#include "px_test.h"

/* A valid minimal profile with one substitution (old -> new) applied. */
static const char *good =
    "{\"name\": \"mini\", \"description\": \"test\",\n"
    " \"capabilities\": {\"schedules\": [\"1f1b\"], \"recompute\": [\"none\", \"full\"],\n"
    "  \"per_layer_recompute\": false, \"uneven_stages\": false, \"uneven_virtual_chunks\": false,\n"
    "  \"zero\": [0, 3], \"hybrid_shard\": true, \"sp\": false, \"tp_without_sp\": true,\n"
    "  \"ep\": false, \"etp\": false, \"cp_flavours\": [], \"grad_bf16\": true,\n"
    "  \"pads_vocab\": false, \"vocab_pad_multiple\": 1, \"needs_flash_attention\": false,\n"
    "  \"precisions\": [\"bf16\"], \"model_features\": [\"llama_block\"], \"max_pp\": 1},\n"
    " \"runtime\": {\"dp_overlap\": true, \"tp_overlap\": false, \"fsdp_prefetch_layers\": 1,\n"
    "  \"fsdp_reshard_after_forward\": true, \"fused_attention\": true,\n"
    "  \"fused_cross_entropy\": false, \"fused_norm\": false, \"fused_rope\": false,\n"
    "  \"grouped_gemm\": false, \"fsdp_flat_collectives\": true,\n"
    "  \"flash_attention_version\": 2},\n"
    " \"sources\": {\"schedules\": \"s\", \"recompute\": \"s\", \"per_layer_recompute\": \"s\",\n"
    "  \"uneven_stages\": \"s\", \"uneven_virtual_chunks\": \"s\", \"zero\": \"s\",\n"
    "  \"hybrid_shard\": \"s\", \"sp\": \"s\", \"tp_without_sp\": \"s\", \"ep\": \"s\", \"etp\": \"s\",\n"
    "  \"cp_flavours\": \"s\", \"grad_bf16\": \"s\", \"pads_vocab\": \"s\", \"vocab_pad_multiple\": \"s\",\n"
    "  \"needs_flash_attention\": \"s\", \"precisions\": \"s\", \"model_features\": \"s\",\n"
    "  \"max_pp\": \"s\", \"dp_overlap\": \"s\", \"tp_overlap\": \"s\", \"fsdp_prefetch_layers\": \"s\",\n"
    "  \"fsdp_reshard_after_forward\": \"s\", \"fused_attention\": \"s\",\n"
    "  \"fused_cross_entropy\": \"s\", \"fused_norm\": \"s\", \"fused_rope\": \"s\",\n"
    "  \"fsdp_flat_collectives\": \"s\", \"flash_attention_version\": \"s\",\n"
    "  \"grouped_gemm\": \"s\"}}\n";

static px_status load_variant(const char *old, const char *new_, px_error *err)
{
    char text[8192];
    const char *at = old ? strstr(good, old) : NULL;
    if (old && !at) {
        fprintf(stderr, "test bug: \"%s\" not in the profile\n", old);
        exit(1);
    }
    if (at)
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - good), good, new_, at + strlen(old));
    else
        snprintf(text, sizeof text, "%s", good);
    char path[512];
    data_write("mini.json", text, path, sizeof path);
    px_framework fw;
    px_error_clear(err);
    return px_framework_load(path, NULL, &fw, err);
}

/* The error names the field and the text. */
static void check_bad(const char *old, const char *new_, const char *field, const char *text)
{
    px_error err;
    px_status st = load_variant(old, new_, &err);
    CHECK_MSG(st != PX_OK, "accepted %s -> %s", old, new_);
    CHECK_MSG(strstr(err.msg, field) != NULL, "%s: message \"%s\" lacks \"%s\"", new_, err.msg,
              field);
    CHECK_MSG(strstr(err.msg, text) != NULL, "%s: message \"%s\" lacks \"%s\"", new_, err.msg,
              text);
    CHECK_MSG(strstr(err.file, "mini.json") != NULL, "%s: error names no file (%s)", new_,
              err.file);
}

static void profiles(void)
{
    static const char *const names[] = {"parallax",    "megatron", "torchtitan",
                                        "llm-foundry", "maxtext",  "deepspeed"};
    px_framework fw;
    px_error err;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        CHECK_MSG(px_framework_load(names[i], NULL, &fw, &err) == PX_OK, "%s: %s", names[i],
                  err.msg);
        CHECK(strcmp(fw.name, names[i]) == 0);
        CHECK(fw.caps.zero[0] && fw.caps.schedules[PX_SCHED_1F1B] | fw.caps.schedules[PX_SCHED_GPIPE]);
    }
    /* the default is the project's own executor: every schedule */
    CHECK(px_framework_load(NULL, NULL, &fw, &err) == PX_OK && !strcmp(fw.name, "parallax"));
    for (int s = 0; s < PX_SCHED_COUNT; s++)
        CHECK(fw.caps.schedules[s]);
    CHECK(fw.caps.max_pp == 0 && fw.caps.zero[3]);
    /* Megatron: 1F1B and interleaved only, uneven splits, padded vocabulary */
    CHECK(px_framework_load("megatron", NULL, &fw, &err) == PX_OK);
    CHECK(fw.caps.schedules[PX_SCHED_1F1B] && fw.caps.schedules[PX_SCHED_INTERLEAVED]);
    CHECK(!fw.caps.schedules[PX_SCHED_ZB_H1] && !fw.caps.schedules[PX_SCHED_GPIPE]);
    CHECK(fw.caps.uneven_stages && fw.caps.uneven_virtual_chunks);
    CHECK(fw.caps.pads_vocab && fw.caps.vocab_pad_multiple == 128);
    CHECK(fw.caps.cp_flavours == (PX_CP_RING_P2P | PX_CP_ALL_GATHER | PX_CP_ALL_TO_ALL));
    CHECK((fw.caps.precisions & PX_PREC_BIT(PX_PREC_FP8)) != 0);
    /* Megatron-Core accumulates in the weight-gradient GEMM and
     * reduce-scatters under its distributed optimizer: the optional traits
     * of the older engines stay off */
    CHECK(!fw.run.grad_accum_separate && !fw.run.zero1_grad_allreduce);
    CHECK(!fw.run.pp_blocking_p2p && !fw.run.tied_grad_allreduce && !fw.run.grad_accum_cast_copy);
    /* Transformer Engine's fused norm, RoPE and SwiGLU (the last optional,
     * absent: true) */
    CHECK(fw.run.fused_norm && fw.run.fused_rope && fw.run.fused_swiglu);
    /* DeepSpeed: its pipeline engine's blocking transfers and tied-gradient
     * all-reduce, its BF16 optimizer's cast copy; the Hugging Face model
     * code's eager norm, RoPE and SwiGLU */
    CHECK(px_framework_load("deepspeed", NULL, &fw, &err) == PX_OK);
    CHECK(fw.run.pp_blocking_p2p && fw.run.tied_grad_allreduce && fw.run.grad_accum_cast_copy);
    CHECK(!fw.run.fused_norm && !fw.run.fused_rope && !fw.run.fused_swiglu);
    /* torchtitan: PyTorch's fused RMSNorm kernel today, torchtitan's own
     * eager RMSNorm in its 2024 release */
    CHECK(px_framework_load("torchtitan", NULL, &fw, &err) == PX_OK);
    CHECK(fw.run.fused_norm && !fw.run.fused_rope && !fw.run.fused_swiglu);
    CHECK(px_framework_load_release("torchtitan", NULL, "2024", &fw, &err) == PX_OK);
    CHECK(!fw.run.fused_norm && !fw.run.fused_rope);
    /* llm-foundry: FSDP only, no pipeline, no CP */
    CHECK(px_framework_load("llm-foundry", NULL, &fw, &err) == PX_OK);
    CHECK(fw.caps.max_pp == 1 && fw.caps.cp_flavours == 0 && fw.caps.zero[3] && !fw.caps.zero[1]);
    CHECK(fw.caps.hybrid_shard && !fw.caps.sp);
    CHECK(fw.run.fsdp_reshard_after_forward && fw.run.fsdp_prefetch_layers == 1);
    /* torchtitan: a plain fp8 request runs as torchao's tensorwise dynamic
     * scaling (fp8-cs); Megatron has delayed scaling and keeps fp8; other
     * formats are never renamed */
    CHECK(px_framework_load("torchtitan", NULL, &fw, &err) == PX_OK);
    CHECK(px_caps_precision(&fw.caps, PX_PREC_FP8) == PX_PREC_FP8_CS);
    CHECK(px_caps_precision(&fw.caps, PX_PREC_MXFP8) == PX_PREC_MXFP8);
    CHECK(px_caps_precision(&fw.caps, PX_PREC_BF16) == PX_PREC_BF16);
    CHECK(px_framework_load("megatron", NULL, &fw, &err) == PX_OK);
    CHECK(px_caps_precision(&fw.caps, PX_PREC_FP8) == PX_PREC_FP8);
    CHECK(px_caps_precision(NULL, PX_PREC_FP8) == PX_PREC_FP8);
    /* unknown name: the message lists the allowed ones */
    CHECK(px_framework_load("nope", NULL, &fw, &err) == PX_ERR_NOT_FOUND);
    CHECK(strstr(err.msg, "megatron") && strstr(err.msg, "torchtitan"));
}

static void bad_profiles(void)
{
    px_error err;
    CHECK_MSG(load_variant(NULL, NULL, &err) == PX_OK, "the good profile: %s", err.msg);
    check_bad("\"schedules\": [\"1f1b\"]", "\"schedules\": [\"1f1b\", \"zb-v\"]",
              "capabilities.schedules[1]", "gpipe, 1f1b, interleaved, zb-h1, zb-h2");
    check_bad("\"zero\": [0, 3]", "\"zero\": [0, 4]", "capabilities.zero[1]", "0, 1, 2, 3");
    check_bad("\"zero\": [0, 3]", "\"zero\": [3]", "capabilities.zero", "0 (plain");
    check_bad("\"max_pp\": 1}", "\"max_pp\": 1, \"tp\": true}", "tp", "unknown");
    check_bad("\"sp\": false,", "\"sp\": 1,", "capabilities.sp", "true or false");
    check_bad("\"precisions\": [\"bf16\"]", "\"precisions\": [\"fp6\"]", "precisions[0]",
              "nvfp4");
    check_bad("\"grouped_gemm\": \"s\"}}", "\"grouped_gemm\": \"s\", \"bogus\": \"s\"}}",
              "sources.bogus", "not a trait");
    check_bad(",\n  \"grouped_gemm\": \"s\"}}", "}}", "sources.grouped_gemm", "cites");
    check_bad("\"fused_rope\": false,", "", "fused_rope", "missing");
    /* the runtime's memory: a fraction of the reserved peak at most a half,
     * and a trait without its source refused */
    check_bad("\"flash_attention_version\": 2}", "\"flash_attention_version\": 2, "
              "\"allocator_cache_fraction\": 0.9}", "allocator_cache_fraction", "0.5");
    check_bad("\"flash_attention_version\": 2}", "\"flash_attention_version\": 2, "
              "\"workspace_bytes\": 1e6}", "workspace_bytes", "integer");
    check_bad("\"flash_attention_version\": 2}", "\"flash_attention_version\": 2, "
              "\"loss_logit_bytes\": 12}", "loss_logit_bytes", "source");
    check_bad("\"flash_attention_version\": 2}", "\"flash_attention_version\": 2, "
              "\"loss_parallel_logit_bytes\": 17}", "loss_parallel_logit_bytes", "16");
}

/* Plans under megatron never use a zero-bubble schedule or GPipe; under
 * llm-foundry never a pipeline; fixed dimensions they cannot run are
 * errors naming the capability. */
static void search(void)
{
    px_model m;
    px_hw hw;
    px_error err;
    CHECK(px_model_load("tiny-llama", NULL, &m, &err) == PX_OK);
    CHECK(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK);
    static px_search_result res;
    px_framework fw;
    px_search_opts o;

    CHECK(px_framework_load("megatron", NULL, &fw, &err) == PX_OK);
    px_search_opts_init(&o);
    o.caps = &fw.caps;
    o.run = &fw.run;
    o.top = 50;
    o.milp = false;
    o.global_batch = 64;
    CHECK_MSG(px_search_run(&m, &hw, 16, &o, &res, &err) == PX_OK, "%s", err.msg);
    CHECK(res.n_top > 0 && res.rejected[PX_REJ_FRAMEWORK] > 0);
    for (int i = 0; i < res.n_top; i++) {
        px_schedule s = res.top[i].par.schedule;
        CHECK(s == PX_SCHED_1F1B || s == PX_SCHED_INTERLEAVED);
    }
    o.schedule = PX_SCHED_ZB_H1;
    CHECK(px_search_run(&m, &hw, 16, &o, &res, &err) == PX_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "schedules") && strstr(err.msg, "zb-h1") &&
                  strstr(err.msg, "megatron"),
              "%s", err.msg);

    /* torchtitan: the search itself runs a plain fp8 request as fp8-cs */
    CHECK(px_framework_load("torchtitan", NULL, &fw, &err) == PX_OK);
    px_search_opts_init(&o);
    o.caps = &fw.caps;
    o.run = &fw.run;
    o.milp = false;
    o.global_batch = 64;
    o.precision = PX_PREC_FP8;
    CHECK_MSG(px_search_run(&m, &hw, 8, &o, &res, &err) == PX_OK, "%s", err.msg);
    CHECK(res.n_top > 0 && res.top[0].par.precision == PX_PREC_FP8_CS);

    CHECK(px_framework_load("llm-foundry", NULL, &fw, &err) == PX_OK);
    px_search_opts_init(&o);
    o.caps = &fw.caps;
    o.run = &fw.run;
    o.top = 50;
    o.milp = false;
    o.global_batch = 64;
    CHECK_MSG(px_search_run(&m, &hw, 16, &o, &res, &err) == PX_OK, "%s", err.msg);
    for (int i = 0; i < res.n_top; i++) {
        const px_parallel *p = &res.top[i].par;
        CHECK(p->pp == 1 && p->cp == 1 && p->zero != 1 && !p->sp);
        CHECK(p->recompute != PX_RECOMPUTE_SELECTIVE);
    }
    o.pp = 2;
    CHECK(px_search_run(&m, &hw, 16, &o, &res, &err) == PX_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "max_pp") != NULL, "%s", err.msg);
    o.pp = 0;
    o.zero = 1;
    CHECK(px_search_run(&m, &hw, 16, &o, &res, &err) == PX_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "capability zero") != NULL, "%s", err.msg);

    /* the overlap traits come from the runtime unless fixed */
    px_search_opts_init(&o);
    o.caps = &fw.caps;
    o.run = &fw.run;
    o.milp = false;
    o.global_batch = 64;
    CHECK(px_search_run(&m, &hw, 16, &o, &res, &err) == PX_OK);
    CHECK(res.top[0].par.tp_overlap == fw.run.tp_overlap);
    o.tp_overlap = 1;
    CHECK(px_search_run(&m, &hw, 16, &o, &res, &err) == PX_OK);
    CHECK(res.top[0].par.tp_overlap);
}

/* Release names as dates, and the nearest documented state: a tie goes to
 * the earlier, today's state counts only when dated. */
static void release_dates(void)
{
    double y;
    CHECK(px_release_date("2023", &y) && y == 2023.5);
    CHECK(px_release_date("nemo-24.03", &y) && y == 2024.0 + 2.5 / 12.0);
    CHECK(!px_release_date("nemo-24.13", &y) && !px_release_date("nemo-24.3", &y));
    CHECK(!px_release_date("20245", &y) && !px_release_date("r2023", &y) &&
          !px_release_date(NULL, &y));
    CHECK(px_release_month("2026-08", &y) && y == 2026.0 + 7.5 / 12.0);
    CHECK(!px_release_month("2026-00", &y) && !px_release_month("2026-8", &y));
    const char *names[] = {"2020", "nemo-24.03", "nemo-24.07"};
    double today = 2026.0 + 7.5 / 12.0;
    CHECK(px_release_nearest("1990", names, 3, today) == 0);
    CHECK(px_release_nearest("nemo-24.05", names, 3, today) == 1); /* a tie: the earlier */
    CHECK(px_release_nearest("2026", names, 3, today) == -1);
    CHECK(px_release_nearest("2025", names, 3, today) == 2);
    CHECK(px_release_nearest("2025", names, 3, -1.0) == 2); /* today undated */
    CHECK(px_release_nearest("2025", names, 0, -1.0) == -2);
    CHECK(px_release_nearest("latest", names, 3, today) == -2);
}

int main(void)
{
    release_dates();
    profiles();
    bad_profiles();
    search();
    data_cleanup();
    return px_test_result("framework");
}
