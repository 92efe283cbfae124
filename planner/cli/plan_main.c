/* plan_main.c — build/plan: the `plan` command (px_plan_cmd.h) on the
 * process's command line; prints its errors and turns them into the exit
 * status (2: a bad command line, 1: any other failure). */
#include "px_args.h"
#include "px_plan_cmd.h"

int main(int argc, char **argv)
{
    return px_args_run_command("plan", px_plan_command, argc, argv);
}
