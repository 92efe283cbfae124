/* px_plan_cmd.h — the `plan` command as a library call.  build/plan's main
 * is a thin wrapper around px_plan_command; the C API (px_api.h) and the
 * Python package call the same function, so the three cannot disagree. */
#ifndef PX_PLAN_CMD_H
#define PX_PLAN_CMD_H

#include <stddef.h>
#include <stdio.h>

#include "px_error.h"
#include "px_model.h"

/* Runs `plan` with the command line argv[0..argc-1] (argv[0]: the tool's
 * name), writing what the tool prints on stdout to out.  Returns PX_OK, or
 * an error in err: PX_ERR_USAGE for a bad command line (the caller adds the
 * hint to --help), any other status for a failure (a model that cannot be
 * read, a GPU count nothing factors...).  Prints nothing on stderr; never
 * exits. */
px_status px_plan_command(int argc, char **argv, FILE *out, px_error *err);

/* The same with the model given as a struct (a binding's model object):
 * --model must then be absent. */
px_status px_plan_command_model(int argc, char **argv, const px_model *model, FILE *out,
                                px_error *err);

/* plan's option names, without dashes, as a JSON array text. */
void px_plan_option_names_json(char *buf, size_t buf_len);

/* Whether plan's option name ("--gpus") takes a value: 1, 0 (a switch), -1
 * (no such option). */
int px_plan_option_takes_value(const char *name);

/* Runs `validate` (docs/validation.md) with argv, as build/validate and
 * `plan --validate` do.  --check with the published runs outside the bounds
 * returns PX_ERR_INFEASIBLE (after the table). */
px_status px_validate_command(int argc, char **argv, FILE *out, px_error *err);

/* Whether validate's option name takes a value (as px_plan_option_takes_value). */
int px_validate_option_takes_value(const char *name);

#endif
