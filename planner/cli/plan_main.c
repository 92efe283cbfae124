/* plan_main.c — build/plan: the `plan` command (px_plan_cmd.h) on the
 * process's command line; prints its errors and turns them into the exit
 * status (2: a bad command line, 1: any other failure). */
#include <stdio.h>

#include "px_args.h"
#include "px_io.h"
#include "px_plan_cmd.h"

int main(int argc, char **argv)
{
    px_error err;
    px_status st = px_plan_command(argc, argv, stdout, &err);
    px_error out_err;
    if (px_io_flush_stdout(&out_err) != PX_OK && st == PX_OK) {
        err = out_err;
        st = PX_ERR_IO;
    }
    if (st != PX_OK) {
        char msg[4096];
        px_args_error_text("plan", &err, msg, sizeof msg);
        fprintf(stderr, "%s\n", msg);
    }
    return px_args_exit_status(st);
}
