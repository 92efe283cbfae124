/* px_plan_list.h — the plan files of a directory, for `execute --plans DIR`:
 * every plan `plan --write-top DIR` (and `-o DIR/NAME.json`) wrote, run in
 * one launch one after another. */
#ifndef PX_PLAN_LIST_H
#define PX_PLAN_LIST_H

#include "px_error.h"

/* The most plan files one directory may hold (`plan --top` writes at most
 * 1000). */
#define PX_PLAN_LIST_MAX 1024

/* The paths "DIR/NAME.json" of the regular files of dir whose names end in
 * ".json", in byte order of their names, in *paths (*n of them; free with
 * px_plan_list_free).  PX_ERR_IO when dir cannot be read, PX_ERR_INVALID when
 * it holds no such file or more than PX_PLAN_LIST_MAX. */
px_status px_plan_list(const char *dir, char ***paths, int *n, px_error *err);

void px_plan_list_free(char **paths, int n);

#endif
