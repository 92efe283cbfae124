/* px_plan_recipe.c — a recipe file's options in front of the command line
 * (px_plan_recipe.h). */
#include "px_plan_recipe.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_datadir.h"
#include "px_plan_cmd.h"
#include "px_plan_cmd_internal.h"

/* Options a recipe may not set: where the output goes, what the tool does
 * instead of planning, and recipes themselves. */
static const char *const not_in_recipe[] = {
    "--recipe", "-o",         "--write-top", "--html",    "--json",   "--csv",
    "--explain", "--list-models", "--list-hw", "--list-recipes", "--threads", "--sweep",
    "--sweep-gpus",
};

/* Options the command line gives beyond their own name: a swept key, and
 * the other spelling of the global batch. */
static const struct {
    const char *given, *also;
} implies[] = {
    {"--sweep-gpus", "--gpus"},
    {"--tokens-per-step", "--global-batch"},
    {"--global-batch", "--tokens-per-step"},
};

static const struct {
    const char *key, *flag;
} sweep_keys[] = {
    {"gpus", "--gpus"},           {"seq", "--seq"}, {"global-batch", "--global-batch"},
    {"hw", "--hw"},               {"framework", "--framework"},
    {"precision", "--precision"},
};

const char *px_recipes_dir_default(void)
{
    const char *env = getenv("PARALLAX_RECIPES_DIR");
    if (env && env[0])
        return env;
    return px_datadir_pick(PX_SOURCE_ROOT "/recipes", PX_DATA_DIR "/recipes");
}

/* The canonical names of the options the command line gives. */
typedef struct {
    const char *names[64];
    int n;
} given_set;

static void given_add(given_set *g, const char *canonical)
{
    if (canonical && g->n < (int)(sizeof g->names / sizeof g->names[0]))
        g->names[g->n++] = canonical;
}

static bool given_has(const given_set *g, const char *canonical)
{
    for (int i = 0; i < g->n; i++)
        if (!strcmp(g->names[i], canonical))
            return true;
    return false;
}

/* A sweep's KEY=LIST gives KEY's own option. */
static void given_sweep(given_set *g, const char *spec)
{
    size_t klen = strcspn(spec, "=");
    for (size_t i = 0; i < sizeof sweep_keys / sizeof sweep_keys[0]; i++)
        if (strlen(sweep_keys[i].key) == klen && !strncmp(spec, sweep_keys[i].key, klen))
            given_add(g, sweep_keys[i].flag);
}

/* Walks argv[1..] as the parser will: NAME or NAME=VALUE, the value of an
 * option without '=' in the next argument.  Unknown options are left to the
 * parser's error.  *recipe: the --recipe value (NULL: none). */
static void scan_command_line(int argc, char **argv, given_set *g, const char **recipe)
{
    *recipe = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-')
            continue;
        char name[64];
        size_t nlen = strcspn(a, "=");
        if (nlen >= sizeof name)
            continue;
        memcpy(name, a, nlen);
        name[nlen] = '\0';
        const char *canon = plan_option_canonical(name);
        if (!canon)
            continue;
        const char *value = a[nlen] == '=' ? a + nlen + 1 : NULL;
        if (!value && px_plan_option_takes_value(name) == 1 && i + 1 < argc)
            value = argv[++i];
        given_add(g, canon);
        for (size_t k = 0; k < sizeof implies / sizeof implies[0]; k++)
            if (!strcmp(canon, implies[k].given))
                given_add(g, implies[k].also);
        if (!strcmp(canon, "--sweep") && value)
            given_sweep(g, value);
        if (!strcmp(canon, "--recipe") && value && !*recipe)
            *recipe = value;
    }
}

/* The recipes of dir as "a, b, c" into buf. */
static void list_recipes(const char *dir, char *buf, size_t len)
{
    buf[0] = '\0';
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n <= 5 || strcmp(e->d_name + n - 5, ".json"))
            continue;
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%.*s", used ? ", " : "", (int)(n - 5), e->d_name);
    }
    closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void plan_recipe_list(FILE *out)
{
    const char *dir = px_recipes_dir_default();
    char names[4096];
    list_recipes(dir, names, sizeof names);
    fprintf(out, "# recipes (in %s)\n", dir);
    char *v[128];
    int n = 0;
    for (char *tok = strtok(names, ", "); tok && n < 128; tok = strtok(NULL, ", "))
        v[n++] = tok;
    qsort(v, (size_t)n, sizeof v[0], cmp_str);
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.json", dir, v[i]);
        json_t *root = json_load_file(path, 0, NULL);
        json_t *d = root ? json_object_get(root, "description") : NULL;
        fprintf(out, "%-24s %s\n", v[i], json_is_string(d) ? json_string_value(d) : "");
        json_decref(root);
    }
}

/* A name (recipes/NAME.json) or a path (with '/' or ending in .json). */
static px_status recipe_path(const char *name, char *path, size_t len, px_error *err)
{
    size_t n = strlen(name);
    if (strchr(name, '/') || (n > 5 && !strcmp(name + n - 5, ".json"))) {
        snprintf(path, len, "%s", name);
        return PX_OK;
    }
    const char *dir = px_recipes_dir_default();
    snprintf(path, len, "%s/%s.json", dir, name);
    FILE *f = fopen(path, "r");
    if (f) {
        fclose(f);
        return PX_OK;
    }
    char known[1024];
    list_recipes(dir, known, sizeof known);
    return PX_FAIL(err, PX_ERR_NOT_FOUND, "--recipe \"%s\": no such recipe in %s; the recipes: %s",
                   name, dir, known[0] ? known : "(none)");
}

/* One option of the recipe as command-line text: "--KEY" and, for an
 * option with a value, its text (*value NULL for a switch). */
static px_status option_text(const char *file, const char *key, json_t *v, char *flag,
                             size_t flag_len, char *value, size_t value_len, bool *has_value,
                             px_error *err)
{
    snprintf(flag, flag_len, "--%s", key);
    int takes = px_plan_option_takes_value(flag);
    if (takes < 0)
        return PX_FAIL(err, PX_ERR_INVALID, "recipe %s: options.%s: not a plan option (the "
                       "long options of plan --help, without the dashes)", file, key);
    for (size_t i = 0; i < sizeof not_in_recipe / sizeof not_in_recipe[0]; i++)
        if (!strcmp(plan_option_canonical(flag), not_in_recipe[i]))
            return PX_FAIL(err, PX_ERR_INVALID, "recipe %s: options.%s: a recipe sets how a "
                           "run trains, not the output or another recipe; give %s on the "
                           "command line", file, key, flag);
    *has_value = takes == 1;
    if (!takes) {
        if (!json_is_true(v))
            return PX_FAIL(err, PX_ERR_INVALID, "recipe %s: options.%s: a switch: allowed "
                           "value true (or leave it out)", file, key);
        return PX_OK;
    }
    if (json_is_string(v))
        snprintf(value, value_len, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(value, value_len, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(value, value_len, "%.17g", json_real_value(v));
    else
        return PX_FAIL(err, PX_ERR_INVALID, "recipe %s: options.%s: allowed a string or a "
                       "number (the option's value as plan --help gives it)", file, key);
    return PX_OK;
}

static px_status own(plan_argv *a, const char *text, px_error *err)
{
    char *s = strdup(text);
    if (!s)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the recipe's options");
    a->owned[a->n_owned++] = s;
    a->argv[a->argc++] = s;
    return PX_OK;
}

/* The recipe's options not given on the command line, into a. */
static px_status add_recipe(const char *file, json_t *options, const given_set *g,
                            plan_argv *a, px_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(options, key, v) {
        char flag[80], value[512];
        bool has_value = false;
        if (strlen(key) > 64)
            return PX_FAIL(err, PX_ERR_INVALID, "recipe %s: options.%.64s...: not a plan "
                           "option", file, key);
        PX_TRY(option_text(file, key, v, flag, sizeof flag, value, sizeof value, &has_value,
                           err));
        if (given_has(g, plan_option_canonical(flag)))
            continue; /* the command line's own value wins */
        PX_TRY(own(a, flag, err));
        if (has_value)
            PX_TRY(own(a, value, err));
    }
    return PX_OK;
}

/* The recipe's options (a->argv[0..argc-1], the tool's name first) read as
 * the parser reads them: a bad value is an error naming the recipe. */
static px_status check_recipe_values(const char *file, const plan_argv *a, px_error *err)
{
    char **copy = calloc((size_t)a->argc + 1, sizeof *copy); /* getopt permutes its argv */
    if (!copy)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the recipe's options");
    memcpy(copy, a->argv, (size_t)a->argc * sizeof *copy);
    px_error inner;
    px_status st = plan_options_check(a->argc, copy, &inner);
    free(copy);
    if (st == PX_OK)
        return PX_OK;
    char msg[1024];
    px_error_format(&inner, msg, (int)sizeof msg);
    return PX_FAIL(err, PX_ERR_INVALID, "recipe %s: options: %s", file, msg);
}

/* The recipe file's top level: name, description, source (strings) and
 * options (an object); anything else is an error naming it. */
static px_status read_recipe(const char *path, json_t **options_out, json_t **root_out,
                             px_error *err)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root)
        return PX_FAIL(err, je.line > 0 ? PX_ERR_PARSE : PX_ERR_IO, "recipe %s: line %d: %s",
                       path, je.line, je.text);
    px_status st = PX_OK;
    if (!json_is_object(root))
        st = PX_FAIL(err, PX_ERR_INVALID, "recipe %s: an object with name, description, "
                     "source and options", path);
    const char *key;
    json_t *v;
    if (st == PX_OK)
        json_object_foreach(root, key, v) {
            bool text = !strcmp(key, "name") || !strcmp(key, "description") ||
                        !strcmp(key, "source");
            if (text && !json_is_string(v))
                st = PX_FAIL(err, PX_ERR_INVALID, "recipe %s: %s: a string", path, key);
            else if (!text && strcmp(key, "options"))
                st = PX_FAIL(err, PX_ERR_INVALID, "recipe %s: unknown field \"%s\"; allowed: "
                             "name, description, source, options", path, key);
            if (st != PX_OK)
                break;
        }
    json_t *options = st == PX_OK ? json_object_get(root, "options") : NULL;
    if (st == PX_OK && !json_is_object(options))
        st = PX_FAIL(err, PX_ERR_INVALID, "recipe %s: options: required, an object of plan "
                     "options (\"tp\": 2, \"finetune\": \"lora\", ...)", path);
    if (st != PX_OK) {
        json_decref(root);
        return st;
    }
    *options_out = options;
    *root_out = root;
    return PX_OK;
}

px_status plan_recipe_expand(int argc, char **argv, bool model_given, plan_argv *out,
                             px_error *err)
{
    memset(out, 0, sizeof *out);
    given_set g = {.n = 0};
    const char *recipe = NULL;
    scan_command_line(argc, argv, &g, &recipe);
    if (model_given)
        given_add(&g, "--model");
    json_t *root = NULL, *options = NULL;
    char path[1024];
    if (recipe) {
        PX_TRY(recipe_path(recipe, path, sizeof path, err));
        PX_TRY(read_recipe(path, &options, &root, err));
    }
    size_t extra = options ? 2 * json_object_size(options) : 0;
    out->argv = calloc((size_t)argc + extra + 1, sizeof *out->argv);
    out->owned = calloc(extra + 1, sizeof *out->owned);
    px_status st = out->argv && out->owned
                       ? PX_OK
                       : PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the command line");
    if (st == PX_OK && argc > 0)
        out->argv[out->argc++] = argv[0];
    if (st == PX_OK && options)
        st = add_recipe(path, options, &g, out, err);
    if (st == PX_OK && options)
        st = check_recipe_values(path, out, err);
    for (int i = 1; st == PX_OK && i < argc; i++)
        out->argv[out->argc++] = argv[i];
    json_decref(root);
    if (st != PX_OK)
        plan_argv_free(out);
    return st;
}

void plan_argv_free(plan_argv *a)
{
    for (int i = 0; i < a->n_owned; i++)
        free(a->owned[i]);
    free(a->owned);
    free(a->argv);
    memset(a, 0, sizeof *a);
}
