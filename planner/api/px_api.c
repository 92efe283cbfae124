/* px_api.c — the C API of libparallax (parallax.h): JSON requests turned
 * into the tools' command lines and run by the same library functions
 * (px_plan_command, px_validate_command), their output captured. */
#include "parallax.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_args.h"
#include "px_export_cmd.h"
#include "px_fit_runs.h"
#include "px_hw.h"
#include "px_plan_cmd.h"
#include "px_plan_json.h"

/* The option parser keeps getopt's state in globals: one call at a time. */
static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;

int parallax_api_version(void) { return PARALLAX_API_VERSION; }

const char *parallax_version(void) { return px_version(); }

void parallax_free(char *result) { free(result); }

/* *result = {"error": message, "status": name, "code": n}; returns the code. */
static int fail(const px_error *err, char **result)
{
    char msg[2048];
    px_error_format(err, msg, (int)sizeof msg);
    json_t *o = json_pack("{s:s,s:s,s:i}", "error", msg, "status", px_status_name(err->code),
                          "code", (int)err->code);
    *result = o ? json_dumps(o, JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return err->code != PX_OK ? (int)err->code : (int)PX_ERR_INTERNAL;
}

/* *result = doc as text (doc is consumed). */
static int answer(json_t *doc, char **result)
{
    *result = json_dumps(doc, JSON_SORT_KEYS | JSON_INDENT(2));
    json_decref(doc);
    if (*result)
        return PARALLAX_OK;
    px_error err;
    PX_FAIL(&err, PX_ERR_NOMEM, "out of memory for the result");
    return fail(&err, result);
}

static px_status parse_request(const char *request, json_t **out, px_error *err)
{
    json_error_t je;
    *out = json_loads(request ? request : "", 0, &je);
    if (!*out)
        return px_error_set(err, PX_ERR_PARSE, "request", je.line, je.column, "%s", je.text);
    if (!json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return PX_FAIL(err, PX_ERR_INVALID, "request: expected a JSON object");
    }
    return PX_OK;
}

/* A command line built from a request: argv[0..argc-1], owned strings. */
typedef struct {
    int argc, cap;
    char **argv;
} cmdline;

static px_status push(cmdline *c, const char *s, px_error *err)
{
    if (c->argc + 2 > c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        char **a = realloc(c->argv, (size_t)cap * sizeof *a);
        if (!a)
            return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
        c->argv = a;
        c->cap = cap;
    }
    c->argv[c->argc] = strdup(s);
    if (!c->argv[c->argc])
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    c->argv[++c->argc] = NULL;
    return PX_OK;
}

static void cmdline_free(cmdline *c)
{
    for (int i = 0; i < c->argc; i++)
        free(c->argv[i]);
    free(c->argv);
}

/* One request key as options: "global_batch": 2048 -> --global-batch 2048;
 * a list gives the option once per element (the tool refuses a repeat of
 * an option that takes one).
 * takes_value: the tool's px_*_option_takes_value. */
static px_status push_option(cmdline *c, const char *key, json_t *v,
                             int (*takes_value)(const char *), px_error *err)
{
    char flag[128];
    snprintf(flag, sizeof flag, "--%s", key);
    for (char *p = flag + 2; *p; p++)
        if (*p == '_')
            *p = '-';
    int kind = takes_value(flag);
    if (json_is_null(v))
        return PX_OK; /* a binding's "not given" */
    if (kind < 0)
        return PX_FAIL(err, PX_ERR_USAGE, "unknown option \"%s\" (request key \"%s\")", flag,
                       key);
    if (kind == 0) {
        if (!json_is_boolean(v))
            return PX_FAIL(err, PX_ERR_USAGE, "%s is a switch: give true or false", flag);
        return json_is_true(v) ? push(c, flag, err) : PX_OK;
    }
    if (json_is_array(v)) { /* a repeatable option: "sweep": ["gpus=8..64", "seq=4096,8192"] */
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            if (json_is_array(e) || json_is_object(e))
                return PX_FAIL(err, PX_ERR_USAGE, "%s: a list holds strings or numbers", flag);
            PX_TRY(push_option(c, key, e, takes_value, err));
        }
        return PX_OK;
    }
    char val[64];
    if (json_is_string(v))
        snprintf(val, sizeof val, "%s", ""); /* pushed below, whole */
    else if (json_is_integer(v))
        snprintf(val, sizeof val, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(val, sizeof val, "%.17g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(val, sizeof val, "%s", json_is_true(v) ? "on" : "off");
    else
        return PX_FAIL(err, PX_ERR_USAGE, "%s: expected a string, a number or a boolean", flag);
    px_status st = push(c, flag, err);
    if (st == PX_OK)
        st = push(c, json_is_string(v) ? json_string_value(v) : val, err);
    return st;
}

/* The command line of tool from the request's keys, except those in skip
 * (NULL-terminated); first (may be NULL) right after the tool's name. */
static px_status build_cmdline(cmdline *c, const char *tool, const char *first, json_t *req,
                               const char *const *skip, int (*takes_value)(const char *),
                               px_error *err)
{
    memset(c, 0, sizeof *c);
    px_status st = push(c, tool, err);
    if (st == PX_OK && first)
        st = push(c, first, err);
    const char *key;
    json_t *v;
    json_object_foreach(req, key, v) {
        bool skipped = false;
        for (int i = 0; skip[i]; i++)
            skipped = skipped || !strcmp(key, skip[i]);
        if (st == PX_OK && !skipped)
            st = push_option(c, key, v, takes_value, err);
    }
    return st;
}

/* Keys a request may not hold: the API chooses the output form itself. */
static px_status refuse_keys(json_t *req, const char *const *keys, px_error *err)
{
    for (int i = 0; keys[i]; i++)
        if (json_object_get(req, keys[i]))
            return PX_FAIL(err, PX_ERR_USAGE,
                           "\"%s\" is not a request key here: the call chooses the output "
                           "form (JSON; parallax_explain for the text)",
                           keys[i]);
    return PX_OK;
}

/* Runs a command (cmd) on c's command line with out captured into *text. */
typedef px_status (*command_fn)(const cmdline *c, const px_model *model, FILE *out,
                                px_error *err);

static px_status capture(command_fn cmd, const cmdline *c, const px_model *model, char **text,
                         px_error *err)
{
    size_t len = 0;
    *text = NULL;
    FILE *mem = open_memstream(text, &len);
    if (!mem)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the output");
    px_status st = cmd(c, model, mem, err);
    if (fclose(mem) != 0 && st == PX_OK)
        st = PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the output");
    if (st != PX_OK) {
        free(*text);
        *text = NULL;
    }
    return st;
}

static px_status plan_fn(const cmdline *c, const px_model *model, FILE *out, px_error *err)
{
    return px_plan_command_model(c->argc, c->argv, model, out, err);
}

static px_status validate_fn(const cmdline *c, const px_model *model, FILE *out,
                             px_error *err)
{
    (void)model;
    return px_validate_command(c->argc, c->argv, out, err);
}

/* The model of a request's "model" value when it is an object. */
static px_status request_model(json_t *req, px_model **model, px_error *err)
{
    json_t *m = json_object_get(req, "model");
    *model = NULL;
    if (!json_is_object(m))
        return PX_OK;
    *model = calloc(1, sizeof **model);
    if (!*model)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    px_status st = px_model_from_any_json(m, "model", *model, err);
    if (st != PX_OK) {
        free(*model);
        *model = NULL;
    }
    return st;
}

/* plan (explain false: --json) or plan --explain (the text). */
static int run_plan(const char *request, bool explain, char **result)
{
    static const char *const refused[] = {"json", "csv", "list_models", "list-models", "list_hw",
                                          "list-hw", NULL};
    px_error err;
    px_error_clear(&err);
    json_t *req = NULL;
    px_model *model = NULL;
    char *text = NULL;
    cmdline c = {0};
    pthread_mutex_lock(&api_lock);
    px_status st = parse_request(request, &req, &err);
    if (st == PX_OK)
        st = refuse_keys(req, refused, &err);
    if (st == PX_OK)
        st = request_model(req, &model, &err);
    if (st == PX_OK) {
        const char *const skip[] = {model ? "model" : "", NULL};
        st = build_cmdline(&c, "plan", explain ? "--explain" : "--json", req, skip,
                           px_plan_option_takes_value, &err);
    }
    if (st == PX_OK)
        st = capture(plan_fn, &c, model, &text, &err);
    pthread_mutex_unlock(&api_lock);
    cmdline_free(&c);
    free(model);
    json_decref(req);
    if (st != PX_OK)
        return fail(&err, result);
    if (explain) {
        int rc = answer(json_pack("{s:s}", "text", text), result);
        free(text);
        return rc;
    }
    *result = text; /* plan --json's document, as the tool prints it */
    return PARALLAX_OK;
}

int parallax_plan(const char *request, char **result) { return run_plan(request, false, result); }

int parallax_explain(const char *request, char **result)
{
    return run_plan(request, true, result);
}

int parallax_plan_options(char **result)
{
    char buf[4096];
    px_plan_option_names_json(buf, sizeof buf);
    json_t *all = json_loads(buf, 0, NULL);
    json_t *names = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(all, i, v) {
        const char *n = json_string_value(v);
        if (strcmp(n, "json") && strcmp(n, "list-models") && strcmp(n, "list-hw"))
            json_array_append(names, v);
    }
    json_decref(all);
    return answer(names, result);
}

int parallax_validate(const char *request, char **result)
{
    static const char *const refused[] = {"json", "explain", NULL};
    static const char *const skip[] = {"file", NULL};
    px_error err;
    px_error_clear(&err);
    json_t *req = NULL;
    char *text = NULL;
    cmdline c = {0};
    pthread_mutex_lock(&api_lock);
    px_status st = parse_request(request, &req, &err);
    if (st == PX_OK)
        st = refuse_keys(req, refused, &err);
    json_t *file = req ? json_object_get(req, "file") : NULL;
    if (st == PX_OK && file && !json_is_string(file) && !json_is_null(file))
        st = PX_FAIL(&err, PX_ERR_USAGE, "file: expected the path of a published-runs file");
    if (st == PX_OK)
        st = build_cmdline(&c, "validate", "--json", req, skip, px_validate_option_takes_value,
                           &err);
    if (st == PX_OK && json_is_string(file))
        st = push(&c, json_string_value(file), &err);
    if (st == PX_OK)
        st = capture(validate_fn, &c, NULL, &text, &err);
    pthread_mutex_unlock(&api_lock);
    cmdline_free(&c);
    json_decref(req);
    if (st != PX_OK)
        return fail(&err, result);
    *result = text;
    return PARALLAX_OK;
}

/* The plan of a request's "plan": a plan object or a plan file's path. */
static px_status request_plan(json_t *req, px_plan *plan, px_error *err)
{
    json_t *v = json_object_get(req, "plan");
    if (json_is_string(v))
        return px_plan_read(json_string_value(v), plan, err);
    if (json_is_object(v))
        return px_plan_from_json(v, "plan", plan, err);
    return PX_FAIL(err, PX_ERR_USAGE, "plan: expected a plan object or the path of a plan file");
}

/* A string key of the request, or def when absent. */
static px_status string_key(json_t *req, const char *key, const char *def, const char **out,
                            px_error *err)
{
    json_t *v = json_object_get(req, key);
    *out = def;
    if (!v || json_is_null(v))
        return def ? PX_OK : PX_FAIL(err, PX_ERR_USAGE, "%s is required", key);
    if (!json_is_string(v))
        return PX_FAIL(err, PX_ERR_USAGE, "%s: expected a string", key);
    *out = json_string_value(v);
    return PX_OK;
}

int parallax_export(const char *request, char **result)
{
    px_error err;
    px_error_clear(&err);
    json_t *req = NULL;
    char *text = NULL;
    const char *to = NULL, *plan_path = NULL, *exe = NULL;
    px_plan *plan = calloc(1, sizeof *plan);
    px_status st = plan ? parse_request(request, &req, &err)
                        : PX_FAIL(&err, PX_ERR_NOMEM, "out of memory");
    json_t *pv = req ? json_object_get(req, "plan") : NULL;
    if (st == PX_OK)
        st = string_key(req, "to", NULL, &to, &err);
    /* what the slurm script runs: the plan file (the request's path, else
     * plan.json beside the script) and build/execute (else on PATH) */
    if (st == PX_OK)
        st = string_key(req, "plan_path", json_is_string(pv) ? json_string_value(pv)
                                                             : "plan.json", &plan_path, &err);
    if (st == PX_OK)
        st = string_key(req, "execute_path", "execute", &exe, &err);
    if (st == PX_OK)
        st = request_plan(req, plan, &err);
    if (st == PX_OK)
        st = px_export_text(plan, to, plan_path, exe, &text, &err);
    free(plan);
    json_decref(req);
    if (st != PX_OK)
        return fail(&err, result);
    int rc = answer(json_pack("{s:s}", "text", text), result);
    free(text);
    return rc;
}

/* The model of a request's "model" (a name, a path or an object). */
static px_status load_model(json_t *req, px_model *m, px_error *err)
{
    json_t *v = json_object_get(req, "model");
    json_t *name = json_object_get(req, "name");
    px_status st;
    if (json_is_string(v))
        st = px_model_load(json_string_value(v), NULL, m, err);
    else if (json_is_object(v))
        st = px_model_from_any_json(v, "model", m, err);
    else
        st = PX_FAIL(err, PX_ERR_USAGE, "model: expected a preset name, a path or an object");
    if (st == PX_OK && name && !json_is_null(name)) {
        if (!json_is_string(name) || !json_string_value(name)[0] ||
            strlen(json_string_value(name)) >= sizeof m->name)
            return PX_FAIL(err, PX_ERR_USAGE, "name: expected a string of 1..%zu characters",
                           sizeof m->name - 1);
        snprintf(m->name, sizeof m->name, "%s", json_string_value(name));
    }
    return st;
}

int parallax_model_load(const char *request, char **result)
{
    px_error err;
    px_error_clear(&err);
    json_t *req = NULL, *spec = NULL;
    px_model *m = calloc(1, sizeof *m);
    px_status st = m ? parse_request(request, &req, &err) : PX_FAIL(&err, PX_ERR_NOMEM, "out of memory");
    if (st == PX_OK)
        st = load_model(req, m, &err);
    if (st == PX_OK)
        st = px_model_to_json(m, &spec, &err);
    px_param_count pc = {0};
    if (st == PX_OK)
        px_model_count_params(m, &pc);
    free(m);
    json_decref(req);
    if (st != PX_OK)
        return fail(&err, result);
    return answer(json_pack("{s:o,s:I,s:I}", "model", spec, "params", (json_int_t)pc.total,
                            "params_active", (json_int_t)pc.active),
                  result);
}

int parallax_hw_load(const char *request, char **result)
{
    px_error err;
    px_error_clear(&err);
    json_t *req = NULL, *doc = NULL;
    px_hw *hw = calloc(1, sizeof *hw);
    px_status st = hw ? parse_request(request, &req, &err) : PX_FAIL(&err, PX_ERR_NOMEM, "out of memory");
    json_t *v = req ? json_object_get(req, "hw") : NULL;
    if (st == PX_OK) {
        if (json_is_string(v))
            st = px_hw_load(json_string_value(v), NULL, hw, &err);
        else if (json_is_object(v))
            st = px_hw_from_json(v, "hw", "", hw, &err);
        else
            st = PX_FAIL(&err, PX_ERR_USAGE, "hw: expected a profile name, a path or an object");
    }
    if (st == PX_OK)
        st = px_hw_to_json(hw, &doc, &err);
    free(hw);
    json_decref(req);
    if (st != PX_OK)
        return fail(&err, result);
    return answer(doc, result);
}

/* A request's string key (absent: NULL), or a usage error naming it. */
static px_status opt_string(json_t *req, const char *key, const char **out, px_error *err)
{
    json_t *v = json_object_get(req, key);
    *out = json_is_string(v) ? json_string_value(v) : NULL;
    if (v && !json_is_string(v))
        return PX_FAIL(err, PX_ERR_USAGE, "%s: expected a profile name or path", key);
    return PX_OK;
}

int parallax_calibrate_from_runs(const char *request, char **result)
{
    static const char *const keys[] = {"runs", "hw", "framework", "max_factors", NULL};
    px_error err;
    px_error_clear(&err);
    json_t *req = NULL;
    px_fit_runs_opts o = {.leave_one_out = true};
    px_fit_runs_result r = {0};
    px_status st = parse_request(request, &req, &err);
    const char *k;
    json_t *v;
    if (st == PX_OK)
        json_object_foreach(req, k, v) {
            int i = 0;
            while (keys[i] && strcmp(keys[i], k) != 0)
                i++;
            if (!keys[i]) {
                st = PX_FAIL(&err, PX_ERR_USAGE,
                             "%s: unknown key (allowed: runs, hw, framework, max_factors)", k);
                break;
            }
        }
    if (st == PX_OK)
        st = opt_string(req, "hw", &o.hw, &err);
    if (st == PX_OK)
        st = opt_string(req, "framework", &o.framework, &err);
    json_t *mf = req ? json_object_get(req, "max_factors") : NULL;
    if (st == PX_OK && mf && !json_is_null(mf)) {
        if (!json_is_integer(mf) || json_integer_value(mf) < 1 ||
            json_integer_value(mf) > PX_FIT_FACTOR_COUNT)
            st = PX_FAIL(&err, PX_ERR_USAGE, "max_factors: expected an integer 1..%d",
                         PX_FIT_FACTOR_COUNT);
        else
            o.max_factors = (int)json_integer_value(mf);
    }
    if (st == PX_OK) {
        pthread_mutex_lock(&api_lock);
        st = px_fit_runs(json_object_get(req, "runs"), "runs", &o, &r, &err);
        pthread_mutex_unlock(&api_lock);
    }
    json_t *doc = NULL;
    if (st == PX_OK) {
        json_t *t = px_fit_runs_table_json(&r);
        doc = t ? json_pack("{s:O,s:O,s:o}", "hw", r.hw_doc, "framework", r.fw_doc, "fit", t)
                : NULL;
        if (!doc)
            st = PX_FAIL(&err, PX_ERR_NOMEM, "out of memory for the result");
        px_fit_runs_free(&r);
    }
    json_decref(req);
    if (st != PX_OK)
        return fail(&err, result);
    return answer(doc, result);
}
