/* px_export_cmd.h — the `export` command as a library call (build/export's
 * main and the C API's parallax_export run it): a plan file as the launch
 * configuration of a training framework (docs/export.md). */
#ifndef PX_EXPORT_CMD_H
#define PX_EXPORT_CMD_H

#include <stdio.h>

#include "px_error.h"
#include "px_plan.h"

/* Runs `export` with argv (argv[0]: the tool's path; the slurm script runs
 * the `execute` beside it).  Without -o the file goes to out.  Returns
 * PX_OK, PX_ERR_USAGE for a bad command line or a target without an
 * exporter, or the failure (a plan the target cannot run:
 * PX_ERR_UNSUPPORTED naming the feature). */
px_status px_export_command(int argc, char **argv, FILE *out, px_error *err);

/* The exported file of plan for the target named to, as a new string
 * (free()).  plan_path and execute_path: what the slurm script names. */
px_status px_export_text(const px_plan *plan, const char *to, const char *plan_path,
                         const char *execute_path, char **text, px_error *err);

#endif
