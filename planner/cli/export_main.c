/* export_main.c — build/export: the `export` command (px_export_cmd.h) on
 * the process's command line: a plan file as the launch configuration of a
 * training framework (docs/export.md). */
#include "px_args.h"
#include "px_export_cmd.h"

int main(int argc, char **argv)
{
    return px_args_run_command("export", px_export_command, argc, argv);
}
