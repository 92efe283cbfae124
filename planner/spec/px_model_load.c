/* px_model_load.c — a model by name or path: a preset of models/ (or an
 * alias), a preset-schema JSON, a Hugging Face config.json or model folder
 * (px_model.h). */
#include "px_model.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "px_jfield.h"
#include "px_model_dir.h"
#include "px_plan_json.h"

static bool is_path(const char *s)
{
    if (strchr(s, '/'))
        return true;
    size_t n = strlen(s);
    if (n > 5 && strcmp(s + n - 5, ".json") == 0)
        return true;
    return false;
}

static px_status load_file(const char *path, px_model *out, px_error *err)
{
    json_t *root = NULL;
    px_status st = px_jf_load_file(path, &root, err);
    if (st != PX_OK)
        return st;
    st = px_model_from_any_json(root, path, out, err);
    json_decref(root);
    return st;
}

static bool file_exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted list of the *.json files in dir (caller frees each and the array). */
static int list_json(const char *dir, char ***out)
{
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0, cap = 0;
    char **names = NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len <= 5 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **nn = realloc(names, (size_t)cap * sizeof *nn);
            if (!nn)
                break;
            names = nn;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    *out = names;
    return n;
}

void px_model_list_presets(const char *models_dir, char *buf, int buf_len)
{
    if (buf_len <= 0)
        return;
    buf[0] = '\0';
    const char *dir = models_dir ? models_dir : px_models_dir_default();
    char **files;
    int n = list_json(dir, &files);
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        json_t *root = json_load_file(path, 0, NULL);
        char item[512];
        files[i][strlen(files[i]) - 5] = '\0';
        snprintf(item, sizeof item, "%s", files[i]);
        json_t *al = root ? json_object_get(root, "aliases") : NULL;
        size_t j;
        json_t *v;
        json_array_foreach(al, j, v) {
            if (json_is_string(v))
                snprintf(item + strlen(item), sizeof item - strlen(item), "%s%s",
                         j ? ", " : " (alias ", json_string_value(v));
        }
        if (json_array_size(al) > 0)
            snprintf(item + strlen(item), sizeof item - strlen(item), ")");
        size_t used = strlen(buf);
        snprintf(buf + used, (size_t)buf_len - used, "%s%s", used ? ", " : "", item);
        json_decref(root);
        free(files[i]);
    }
    free(files);
}

/* The preset file whose "aliases" contains name, into path; false if none. */
static bool find_alias(const char *dir, const char *name, char *path, size_t path_len)
{
    char **files;
    int n = list_json(dir, &files);
    bool found = false;
    for (int i = 0; i < n; i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        json_t *root = found ? NULL : json_load_file(p, 0, NULL);
        json_t *al = root ? json_object_get(root, "aliases") : NULL;
        size_t j;
        json_t *v;
        json_array_foreach(al, j, v) {
            if (!found && json_is_string(v) && strcmp(json_string_value(v), name) == 0) {
                snprintf(path, path_len, "%s", p);
                found = true;
            }
        }
        json_decref(root);
        free(files[i]);
    }
    free(files);
    return found;
}

px_status px_model_load(const char *name_or_path, const char *models_dir, px_model *out,
                        px_error *err)
{
    if (!name_or_path || !name_or_path[0])
        return PX_FAIL(err, PX_ERR_INVALID, "model: empty name");
    char path[1024];
    bool is_dir;
    if (px_model_dir_config(name_or_path, path, sizeof path, &is_dir, err) != PX_OK)
        return err->code;
    if (is_dir)
        return load_file(path, out, err);
    if (is_path(name_or_path) || file_exists(name_or_path))
        return load_file(name_or_path, out, err);
    const char *dir = models_dir ? models_dir : px_models_dir_default();
    snprintf(path, sizeof path, "%s/%s.json", dir, name_or_path);
    if (!file_exists(path) && !find_alias(dir, name_or_path, path, sizeof path)) {
        char known[4096];
        px_model_list_presets(dir, known, sizeof known);
        return PX_FAIL(err, PX_ERR_NOT_FOUND,
                       "unknown model \"%s\"; known models (in %s): %s; or give a path to a "
                       "preset JSON or a Hugging Face config.json",
                       name_or_path, dir, known[0] ? known : "(none)");
    }
    return load_file(path, out, err);
}
