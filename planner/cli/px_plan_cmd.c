/* px_plan_cmd.c — the `plan` command as a library call: read the command
 * line, search the parallel configurations of a model on G GPUs of a
 * hardware profile, print them ranked (or as JSON), explain the chosen one
 * and write it as a plan file.  build/plan's main and the C API (and so the
 * Python package) run this same code. */
#include "px_plan_cmd_internal.h"
#include "px_plan_recipe.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_args.h"
#include "px_cost.h"
#include "px_cost_precision.h"
#include "px_framework.h"
#include "px_html.h"
#include "px_io.h"
#include "px_partition_refine.h"
#include "px_plan_json.h"
#include "px_plan_predict.h"
#include "px_run_cost.h"
#include "px_search.h"
#include "px_search_plan.h"
#include "px_sweep.h"
#include "px_validate.h"

/* -o, --html, --write-top: refused before a search when they cannot be
 * written (px_io_check_target's rules: a regular file or a new path). */
static px_status check_outputs(const plan_cli *c, px_error *err)
{
    if (c->out)
        PX_TRY(px_io_check_option("-o", c->out, false, err));
    if (c->html)
        PX_TRY(px_io_check_option("--html", c->html, false, err));
    if (c->top_dir)
        PX_TRY(px_io_check_option("--write-top", c->top_dir, true, err));
    return PX_OK;
}

/* What the search needs, on the heap (the structs are large). */
typedef struct {
    px_model model;
    px_hw hw;
    px_framework fw;
    px_search_result res;
    px_plan plan;
    px_plan ranked; /* --write-top: one ranked plan at a time */
} plan_work;

static px_status run_search(plan_cli *c, const px_model *model, FILE *out, px_error *err)
{
    PX_TRY(check_outputs(c, err));
    plan_work *w = calloc(1, sizeof *w);
    if (!w)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the search");
    px_status st = PX_OK;
    if (model)
        w->model = *model;
    else
        st = px_model_load(c->model, NULL, &w->model, err);
    if (st == PX_OK && !c->sweep)
        st = px_hw_load(c->hw, NULL, &w->hw, err);
    if (st == PX_OK && !c->sweep)
        st = px_framework_load_release(c->framework, NULL, c->framework_release, &w->fw, err);
    if (st == PX_OK && c->sweep) { /* each point loads its own profiles */
        st = run_sweep(c, &w->model, out, err);
        free(w);
        return st;
    }
    /* the search validate's rows run too (px_search_plan.h) */
    bool fixed_uniform = false;
    if (st == PX_OK)
        st = px_search_for_plan(&w->model, &w->hw, &w->fw, c->gpus, &c->opts,
                                c->partition_given, &w->res, &fixed_uniform, err);
    if (st == PX_OK) {
        st = make_plan(&w->plan, &w->model, &w->hw, &w->res.top[0], c->opts.run, err);
        snprintf(w->plan.framework, sizeof w->plan.framework, "%s", w->fw.name);
        st = st != PX_OK ? st
             : c->json ? write_json(out, c, &w->model, &w->hw, &w->fw, &w->res, &w->plan, err)
             : c->csv  ? write_csv(out, &w->res, err)
                     : write_table(out, c, &w->model, &w->hw, &w->fw, &w->res, fixed_uniform,
                                   err);
    }
    if (st == PX_OK && c->html) {
        st = write_html(c->html, &w->model, &w->hw, c->gpus, c->opts.run, &w->res, err);
        if (st == PX_OK && !c->json && !c->csv)
            fprintf(out, "# wrote %s\n", c->html);
    }
    /* every ranked plan, as -o writes the chosen one */
    for (int i = 0; st == PX_OK && c->top_dir && i < w->res.n_top; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/plan-%d.json", c->top_dir, i + 1);
        px_plan *p = &w->ranked;
        st = make_plan(p, &w->model, &w->hw, &w->res.top[i], c->opts.run, err);
        snprintf(p->framework, sizeof p->framework, "%s", w->fw.name);
        if (st == PX_OK)
            st = px_plan_write(p, path, err);
    }
    if (st == PX_OK && c->out) {
        st = px_plan_write(&w->plan, c->out, err); /* its error names the path and reason */
        if (st == PX_OK && !c->json && !c->csv)
            fprintf(out, "# wrote %s\n", c->out);
    }
    free(w);
    return st;
}

/* --list-models, --list-hw: the presets one a line. */
static void list_names(FILE *out, bool models)
{
    char *buf = malloc(65536);
    if (!buf)
        return;
    if (models)
        px_model_list_presets(NULL, buf, 65536);
    else
        px_hw_list_profiles(NULL, buf, 65536);
    fprintf(out, "# %s (in %s)\n", models ? "model presets, aliases in parentheses"
                                          : "hardware profiles",
            models ? px_models_dir_default() : px_hw_profiles_dir_default());
    /* the list is "a (alias x, y), b": one entry a line */
    int depth = 0;
    for (const char *p = buf; *p; p++) {
        if (*p == '(')
            depth++;
        else if (*p == ')')
            depth--;
        if (depth == 0 && p[0] == ',' && p[1] == ' ') {
            fputc('\n', out);
            p++;
            continue;
        }
        fputc(*p, out);
    }
    if (buf[0])
        fputc('\n', out);
    free(buf);
}

/* What the command line asked for: the usage, the version, the lists or a
 * search. */
static px_status plan_action(plan_cli *c, px_args_action action, const px_model *model,
                             FILE *out, px_error *err)
{
    if (action == PX_ARGS_HELP) {
        fputs(usage_text, out);
        fputs(usage_text_2, out);
        fputs(usage_text_3, out);
        return PX_OK;
    }
    if (action == PX_ARGS_VERSION) {
        fprintf(out, "plan (parallax) %s\n", px_version());
        return PX_OK;
    }
    if (c->list_models || c->list_hw || c->list_recipes) {
        if (c->list_models)
            list_names(out, true);
        if (c->list_hw)
            list_names(out, false);
        if (c->list_recipes)
            plan_recipe_list(out);
        return PX_OK;
    }
    return run_search(c, model, out, err);
}

px_status px_plan_command_model(int argc, char **argv, const px_model *model, FILE *out,
                                px_error *err)
{
    px_error_clear(err);
    if (argc >= 2 && !strcmp(argv[1], "--validate"))
        return px_validate_command(argc - 1, argv + 1, out, err);
    plan_argv line; /* the recipe's options, then the command line's */
    PX_TRY(plan_recipe_expand(argc, argv, model != NULL, &line, err));
    plan_cli c;
    px_args_action action = PX_ARGS_RUN;
    px_status st = parse_args(line.argc, line.argv, model != NULL, &c, &action, err);
    if (st == PX_OK)
        st = plan_action(&c, action, model, out, err);
    free(c.sweep);
    plan_argv_free(&line);
    return st;
}

px_status px_plan_command(int argc, char **argv, FILE *out, px_error *err)
{
    return px_plan_command_model(argc, argv, NULL, out, err);
}
