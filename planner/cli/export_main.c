/* export_main.c — build/export: the `export` command (px_export_cmd.h) on
 * the process's command line: a plan file as the launch configuration of a
 * training framework (docs/export.md). */
#include <stdio.h>

#include "px_args.h"
#include "px_export_cmd.h"

int main(int argc, char **argv)
{
    px_error err;
    px_status st = px_export_command(argc, argv, stdout, &err);
    if (fflush(stdout) != 0 && st == PX_OK)
        st = PX_FAIL(&err, PX_ERR_IO, "writing to stdout failed");
    if (st != PX_OK) {
        char msg[4096];
        px_args_error_text("export", &err, msg, sizeof msg);
        fprintf(stderr, "%s\n", msg);
    }
    return px_args_exit_status(st);
}
