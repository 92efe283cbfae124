/* px_plan_cmd_internal.h — what the files of the `plan` command share, each
 * calling only those before it: px_plan_options.c (the command line),
 * px_plan_tables.c (the text tables), px_plan_csv.c (--csv),
 * px_plan_cmd_json.c (the JSON and the plan file), px_plan_sweep.c (--sweep),
 * then px_plan_cmd.c (the command).  Not part of the planner's
 * interface. */
#ifndef PX_PLAN_CMD_INTERNAL_H
#define PX_PLAN_CMD_INTERNAL_H

#include <jansson.h>
#include <stdio.h>

#include "px_args.h"
#include "px_cost.h"
#include "px_framework.h"
#include "px_partition_refine.h"
#include "px_plan.h"
#include "px_plan_cmd.h"
#include "px_search.h"
#include "px_sweep.h"

/* What the command line asks for. */
typedef struct {
    const char *model, *hw, *out, *framework;
    const char *framework_release; /* --framework-release; NULL: none */
    const char *html;          /* --html FILE */
    double price_per_gpu_hour; /* --price-per-gpu-hour; 0: the profile's */
    int gpus;
    bool json, csv, explain, list_models, list_hw, list_recipes;
    bool partition_given; /* --partition or --no-milp on the command line */
    bool lora_given;      /* --lora-rank, --lora-alpha or --lora-targets */
    bool offload_fraction_given; /* --offload-fraction */
    bool offload_layers_given;   /* --offload-layers */
    px_search_opts opts;
    px_sweep_spec *sweep; /* --sweep, --sweep-gpus; NULL: none (owned) */
    bool precision_given; /* --precision on the command line */
    const char *top_dir;  /* --write-top */
    const char *recipe;   /* --recipe (its options are in argv already: px_plan_recipe.h) */
} plan_cli;

/* px_plan_options.c */
extern const char usage_text[];
extern const char usage_text_2[];
extern const char usage_text_3[];
px_status parse_args(int argc, char **argv, bool model_given, plan_cli *c,
                     px_args_action *action, px_error *err);
/* The name an option spelling stands for ("--mbs" -> "--micro-batch"); NULL:
 * no such option. */
const char *plan_option_canonical(const char *name);
/* Reads argv's options alone (each value against its allowed values), with
 * none of the checks of a whole command line. */
px_status plan_options_check(int argc, char **argv, px_error *err);
px_status plan_cost_ctx(const struct px_fw_runtime *run, const px_model *model,
                        const px_hw *hw, px_cost_ctx **out, px_error *err);

/* px_plan_tables.c */
/* One communication kind of the cost detail, for the table and the JSON. */
typedef struct {
    const char *label, *key; /* "TP/SP" in the table, "tp" in the JSON */
    double tot, exp, bytes;
    bool cross;
} comm_row;
enum { N_COMM_KINDS = 5 };
const char *recompute_label(const px_parallel *p);
void layer_counts(const px_parallel *p, int64_t n_layers, int counts[PX_RECOMPUTE_COUNT]);
void comm_rows(const px_cost_detail *d, comm_row rows[N_COMM_KINDS]);
px_status stage_table(const px_model *m, const px_hw *hw,
                      const struct px_fw_runtime *run, const px_parallel *par,
                      px_partition_solution *cur, px_partition_solution *uni,
                      int64_t *limit, px_error *err);
px_status write_explain(FILE *out, const struct px_fw_runtime *run, const px_model *model,
                        const px_hw *hw, const px_search_result *res, px_error *err);
px_status write_table(FILE *out, const plan_cli *c, const px_model *model,
                      const px_hw *hw, const px_framework *fw,
                      const px_search_result *res, bool fixed_uniform, px_error *err);

/* px_plan_csv.c */
px_status write_csv(FILE *out, const px_search_result *res, px_error *err);
px_status write_sweep_csv(FILE *out, const px_sweep_spec *s, const px_sweep_row *rows, int n,
                          px_error *err);

/* px_plan_cmd_json.c */
json_t *candidate_json(const px_candidate *c, int64_t seq, int64_t n_layers);
px_status make_plan(px_plan *plan, const px_model *m, const px_hw *hw,
                    const px_candidate *c, const struct px_fw_runtime *run,
                    px_error *err);
px_status write_html(const char *path, const px_model *m, const px_hw *hw, int gpus,
                     const struct px_fw_runtime *run, const px_search_result *res,
                     px_error *err);
px_status write_json(FILE *out, const plan_cli *c, const px_model *model,
                     const px_hw *hw, const px_framework *fw,
                     const px_search_result *res, const px_plan *plan, px_error *err);

/* px_plan_sweep.c */
px_status run_sweep(const plan_cli *c, const px_model *model, FILE *out, px_error *err);

#endif
