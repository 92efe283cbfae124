/* validate_main.c — build/validate: the `validate` command (px_plan_cmd.h):
 * predicts every published run of FILE (default:
 * shared/data/published-megatron.json beside the source tree) and prints
 * predicted vs measured with the errors per row, per group and overall.
 * See docs/validation.md. */
#include <stdio.h>

#include "px_args.h"
#include "px_io.h"
#include "px_plan_cmd.h"

int main(int argc, char **argv)
{
    px_error err;
    px_status st = px_validate_command(argc, argv, stdout, &err);
    px_error out_err;
    if (px_io_flush_stdout(&out_err) != PX_OK && st == PX_OK) {
        err = out_err;
        st = PX_ERR_IO;
    }
    if (st != PX_OK) {
        char msg[4096];
        px_args_error_text("validate", &err, msg, sizeof msg);
        fprintf(stderr, "%s\n", msg);
    }
    return px_args_exit_status(st);
}
