/* validate_main.c — build/validate: the `validate` command (px_plan_cmd.h):
 * predicts every published run of FILE (default:
 * shared/data/published-megatron.json beside the source tree) and prints
 * predicted vs measured with the errors per row, per group and overall.
 * See docs/validation.md. */
#include "px_args.h"
#include "px_plan_cmd.h"

int main(int argc, char **argv)
{
    return px_args_run_command("validate", px_validate_command, argc, argv);
}
