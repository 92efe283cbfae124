/* px_row.h — one published training run as the `plan` call a user would
 * write: the one row -> plan mapping of shared/data/README.md ("How a row
 * becomes a `plan` call"), in the library, for `validate` and for
 * `calibrate --from-runs`.
 *
 * A row (a JSON object of the published-runs schema) becomes
 *   - a model: a Hugging Face style config (px_row_hf_config) read by the
 *     same loader as `plan --model config.json`;
 *   - a hardware profile: named by the GPU and its memory, copied with the
 *     row's gpu_memory_gb / gpus_per_node where they differ;
 *   - the options: every published tp, pp, dp, cp, vpp, ep, micro-batch and
 *     global batch fixed, --zero / --shard-group from zero_stage and fsdp,
 *     --recompute, --precision, --framework, --framework-release, and
 *     --finetune lora / full where the id or notes name LoRA / SFT;
 *   - the compared quantity: tokens/s per GPU when published, else MFU, else
 *     step time; the error is + when the prediction is too fast.
 * px_row_predict then runs exactly the search `plan` runs with those options
 * (px_search_for_plan), so `validate FILE` and `plan` give the same number.
 *
 * Nothing here looks at a row's id, source, recipe, cluster or year beyond
 * what the README's mapping reads (the framework string's release name is
 * one of its rules: px_row_release).
 *
 * Use (calibrate --from-runs predicting a row with fitted profiles):
 *   px_row_call call;  px_row_result res;  px_hw hw;  px_framework fw;
 *   px_row_map(row, NULL, &call, &err);                      // the README's call
 *   px_hw_load("fitted-h100.json", NULL, &hw, &err);
 *   px_row_hw_for(&call, &hw, &hw, &err);                    // the row's memory / node size
 *   px_row_load_framework(&call, "fitted-megatron.json", NULL, &fw, &err); // + its release
 *   px_row_predict(&call, &hw, &fw, &res, &err);             // res.predicted, res.err
 * (the structs are large: allocate them on the heap in a loop).
 *
 * Library code: errors go to a caller-owned px_error; nothing is printed. */
#ifndef PX_ROW_H
#define PX_ROW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "px_error.h"
#include "px_framework.h"
#include "px_hw.h"
#include "px_model.h"
#include "px_search.h"

/* Vocabularies of a row that publishes none (the README's mapping): a
 * gpt2-type model takes GPT-2's as Megatron pads it, a MoE model
 * DeepSeek-V3's; a llama-type model has no default (its config carries
 * null and the model loader refuses it, naming vocab_size). */
#define PX_ROW_VOCAB_GPT2 51200
#define PX_ROW_VOCAB_MOE 129280

/* The quantity a row is compared on. */
typedef enum {
    PX_ROW_ON_NONE = 0,   /* nothing the README compares is measured (not usable) */
    PX_ROW_ON_TOKENS = 1, /* tokens/s per GPU */
    PX_ROW_ON_MFU,        /* model FLOPs utilisation, 0..1 */
    PX_ROW_ON_STEP        /* seconds a step */
} px_row_on;

/* A row as a `plan` call.  Sizes 0 and enums -1 mean "not published:
 * searched", as on plan's command line. */
typedef struct {
    char id[96];
    char family[64];        /* id up to its first '-', "/", the GPU (the tools' family) */
    bool moe, mla;
    px_model model;
    bool vocab_default;     /* the row has no vocabulary: PX_ROW_VOCAB_* used (noted) */
    char hw_name[32];       /* the profile the GPU and its memory name (--hw) */
    px_hw hw;               /* that profile, with the row's memory / node size */
    bool hw_derived;        /* hw differs from the named profile (a copy, as the README says) */
    double row_memory_gb;   /* the row's gpu_memory_gb (0: unpublished) */
    int row_gpus_per_node;  /* the row's gpus_per_node (0: unpublished) */
    int gpus;               /* --gpus */
    int64_t seq_len;        /* --seq */
    int tp, pp, dp, cp, vpp, ep;     /* 0: searched */
    int64_t micro_batch, global_batch; /* 0: searched / plan's default */
    int zero;               /* --zero, -1: searched */
    int shard_group;        /* --shard-group, 0: none */
    int recompute;          /* px_recompute, -1: searched */
    px_precision precision; /* --precision */
    char framework[32];     /* --framework: a profile name of frameworks/ */
    char release[32];       /* --framework-release; "" = none (the framework as today) */
    char finetune[8];       /* --finetune: "lora", "full" or "" (pre-training) */
    px_row_on on;           /* the compared quantity */
    double measured;        /* its measured value (tokens/s per GPU, MFU, or seconds) */
    char note[512];         /* assumptions taken ("; "-separated), "" when none */
} px_row_call;

/* A row's prediction through the plan search. */
typedef struct {
    px_candidate best;      /* the plan `plan` ranks first */
    int64_t global_batch;   /* the global batch the search ran (sequences) */
    double predicted;       /* on call.on: tokens/s per GPU, MFU, or seconds */
    double err;             /* + = predicted too fast: pred/meas - 1 (tokens, MFU),
                             * meas/pred - 1 (step time) */
    bool fixed_uniform;     /* every dimension fixed: that one layout, uniform split */
    bool time_limited;      /* the stage partitioner hit its time limit or budget on some
                             * candidate (px_search_result milp_not_proven / milp_skipped):
                             * the prediction may differ between runs, as plan's does */
} px_row_result;

/* Whether the README counts the row as usable: a GPU with a profile, the
 * model's layers, tp, pp and dp published, and a measured tokens/s per GPU,
 * MFU or step time.  When not, why (may be NULL) says what is missing. */
bool px_row_usable(const json_t *row, char *why, size_t why_len);

/* The Hugging Face style config of the row's "model" object (a new
 * reference, the caller decrefs): deepseek_v3 when arch_notes says MLA,
 * qwen3_moe for other MoE, llama when gated (SwiGLU / gated, or an ffn that
 * is not 4h without GeLU), gpt2 otherwise; head_dim from arch_notes ("head_dim
 * N").  *vocab_default (may be NULL) is set when the row has no vocabulary.
 * NULL when jm is not an object. */
json_t *px_row_hf_config(const json_t *jm, bool *vocab_default);

/* The README's name mappings of a row's strings (NULL or unknown -> the
 * README's "anything else"). */
px_precision px_row_precision(const char *precision);
const char *px_row_framework(const char *framework);   /* "megatron", "torchtitan", ... */
/* "nemo-YY.MM" for "NeMo YY.MM" anywhere, else the first year 19xx/20xx,
 * else "" (none); into buf. */
void px_row_release(const char *framework, char *buf, size_t buf_len);
/* The profile name a GPU (and its memory in GB; <= 0 unknown) maps to, NULL
 * for a GPU without one. */
const char *px_row_hw_name(const char *gpu, double mem_gb);

/* Maps a row into *out: the model built and checked, the hardware profile
 * loaded from profiles_dir (NULL: the default) and adjusted.  Any row with a
 * profiled GPU, tp, pp, dp and layers maps (out->on is PX_ROW_ON_NONE when it
 * measured nothing the README compares: such a row is not usable, but
 * validate still compares its TFLOP/s or layer times).  PX_ERR_INVALID
 * naming the field for a row the mapping cannot read; the model loader's
 * error for a model it refuses. */
px_status px_row_map(const json_t *row, const char *profiles_dir, px_row_call *out,
                     px_error *err);

/* Another profile (a calibrated one of the row's GPU) with the row's memory
 * and node size laid over it as px_row_map lays them over the named one,
 * into *out (which may be base).  For px_row_predict's hw. */
px_status px_row_hw_for(const px_row_call *call, const px_hw *base, px_hw *out, px_error *err);

/* The search options of the call, as `plan` parses its command line into
 * them (px_search_opts_init, then the fixed dimensions, precision...);
 * caps and run are left for px_search_for_plan to set from the framework. */
void px_row_search_opts(const px_row_call *call, px_search_opts *o);

/* The framework profile of the call with its release applied: name_or_path
 * (a name in dir, or a profile file; NULL: call->framework) loaded by
 * px_framework_load_release with call->release. */
px_status px_row_load_framework(const px_row_call *call, const char *name_or_path,
                                const char *dir, px_framework *out, px_error *err);

/* Predicts the row: the search `plan` runs (px_search_for_plan) with the
 * call's options on hw (NULL: call->hw) for framework fw (NULL: the call's
 * framework and release, px_row_load_framework).  Any refusal is the
 * planner's own status and message in err (nothing fits, a layout the
 * framework cannot run...). */
px_status px_row_predict(const px_row_call *call, const px_hw *hw, const px_framework *fw,
                         px_row_result *out, px_error *err);

/* The `plan` command line of the call (without the program name, --model
 * and --hw, whose values are the config and profile files the caller
 * writes): "--gpus G --seq S --tp ... --json", into buf. */
void px_row_plan_args(const px_row_call *call, char *buf, size_t buf_len);

#endif
