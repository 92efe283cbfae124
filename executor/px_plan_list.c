/* px_plan_list.c — the plan files of a directory (px_plan_list.h). */
#include "px_plan_list.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_plan_name(const char *name)
{
    size_t len = strlen(name);
    return len > 5 && !strcmp(name + len - 5, ".json");
}

void px_plan_list_free(char **paths, int n)
{
    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

px_status px_plan_list(const char *dir, char ***paths, int *n, px_error *err)
{
    *paths = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return PX_FAIL(err, PX_ERR_IO, "--plans %s: cannot read the directory: %s", dir,
                       strerror(errno));
    char **list = calloc(PX_PLAN_LIST_MAX, sizeof *list);
    if (!list) {
        closedir(d);
        return PX_FAIL(err, PX_ERR_NOMEM, "--plans %s: out of memory", dir);
    }
    int count = 0;
    px_status st = PX_OK;
    struct dirent *e;
    while (!st && (e = readdir(d))) {
        if (!is_plan_name(e->d_name))
            continue;
        size_t len = strlen(dir) + 1 + strlen(e->d_name) + 1;
        char *path = malloc(len);
        if (!path) {
            st = PX_FAIL(err, PX_ERR_NOMEM, "--plans %s: out of memory", dir);
            break;
        }
        snprintf(path, len, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            free(path);
            continue;
        }
        if (count == PX_PLAN_LIST_MAX) {
            free(path);
            st = PX_FAIL(err, PX_ERR_INVALID, "--plans %s: more than %d plan files (*.json)",
                         dir, PX_PLAN_LIST_MAX);
            break;
        }
        list[count++] = path;
    }
    closedir(d);
    if (!st && count == 0)
        st = PX_FAIL(err, PX_ERR_INVALID, "--plans %s: no plan file (*.json) in the directory",
                     dir);
    if (st) {
        px_plan_list_free(list, count);
        return st;
    }
    qsort(list, (size_t)count, sizeof *list, by_name);
    *paths = list;
    *n = count;
    return PX_OK;
}
