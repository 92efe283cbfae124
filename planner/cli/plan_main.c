/* plan_main.c — build/plan: the `plan` command (px_plan_cmd.h) on the
 * process's command line; prints its errors and turns them into the exit
 * status (2: a bad command line, 1: any other failure). */
#include <stdio.h>

#include "px_args.h"
#include "px_plan_cmd.h"

int main(int argc, char **argv)
{
    px_error err;
    px_status st = px_plan_command(argc, argv, stdout, &err);
    if (fflush(stdout) != 0 && st == PX_OK)
        st = PX_FAIL(&err, PX_ERR_IO, "writing to stdout failed");
    if (st != PX_OK) {
        char msg[4096];
        px_args_error_text("plan", &err, msg, sizeof msg);
        fprintf(stderr, "%s\n", msg);
    }
    return px_args_exit_status(st);
}
