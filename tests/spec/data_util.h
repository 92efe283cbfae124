/* data_util.h — helpers shared by the spec-layer tests: a private temp
 * folder (tests run in parallel), writing a small file into it, and loading
 * a model preset under a check. */
#ifndef DATA_UTIL_H
#define DATA_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_model.h"
#include "px_test.h"

static char data_tmp_dir[256];

static inline const char *data_tmp(void)
{
    if (!data_tmp_dir[0]) {
        snprintf(data_tmp_dir, sizeof data_tmp_dir, "/tmp/px_data_test_XXXXXX");
        if (!mkdtemp(data_tmp_dir)) {
            perror("mkdtemp");
            exit(1);
        }
    }
    return data_tmp_dir;
}

/* Writes text to <tmp>/name and returns the path (static buffer per call site
 * is not needed: callers copy it). */
static inline void data_write(const char *name, const char *text, char *path, size_t path_len)
{
    snprintf(path, path_len, "%s/%s", data_tmp(), name);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

/* Removes the temp folder's files and the folder. */
static inline void data_cleanup(void)
{
    if (!data_tmp_dir[0])
        return;
    char cmd[320];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", data_tmp_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", data_tmp_dir);
}

/* The preset (or file) `name`, a failed check when it does not load. */
static inline px_model data_load_model(const char *name)
{
    px_model m;
    px_error err;
    px_error_clear(&err);
    memset(&m, 0, sizeof m);
    px_status st = px_model_load(name, NULL, &m, &err);
    CHECK_MSG(st == PX_OK, "load %s: %s", name, err.msg);
    return m;
}

static inline const char *data_source_root(void)
{
    const char *r = getenv("PARALLAX_SOURCE_ROOT");
    return r ? r : PX_SOURCE_ROOT;
}

#endif
