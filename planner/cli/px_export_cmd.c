/* px_export_cmd.c — the `export` command (px_export_cmd.h). */
#include "px_export_cmd.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "px_args.h"
#include "px_export.h"
#include "px_io.h"

static const char usage_text[] =
    "usage: export --plan plan.json --to megatron|nemo|torchtitan|deepspeed|slurm [-o FILE]\n"
    "\n"
    "Writes a plan (from `plan -o`) as what a training framework launches:\n"
    "  megatron    Megatron-LM pretrain_gpt.py arguments, one a line, after a comment\n"
    "              with the torchrun and srun lines\n"
    "  nemo        a Megatron-Bridge / NeMo 2 recipe override (YAML)\n"
    "  torchtitan  a torchtitan job (TOML)\n"
    "  deepspeed   a DeepSpeed config (JSON)\n"
    "  slurm       an sbatch script running the plan with Parallax's own executor\n"
    "A plan the target cannot run is refused with the feature named (exit 1).\n"
    "\n"
    "  --plan FILE   the plan (read nothing else)\n"
    "  --to TARGET   the framework\n"
    "  -o FILE       write there (atomically); default: standard output; alias --output\n"
    "  --version     the Parallax version\n"
    "  --help        this text\n"
    "Every option takes its value as `--flag value` or `--flag=value`, once.\n";

typedef struct {
    const char *plan, *to, *out;
} export_cli;

static const px_arg export_rows[] = {
    PX_ARG_STR("--plan", export_cli, plan),
    PX_ARG_STR("--to", export_cli, to),
    PX_ARG_STR("-o", export_cli, out),
    PX_ARG_ALIAS("--output", "-o"),
};
enum { N_EXPORT_ROWS = sizeof export_rows / sizeof export_rows[0] };

px_status px_export_text(const px_plan *plan, const char *to, const char *plan_path,
                         const char *execute_path, char **text, px_error *err)
{
    *text = NULL;
    px_export_target t;
    if (px_export_target_parse(to, &t, err) != PX_OK) {
        err->code = PX_ERR_USAGE; /* a target name that is not one: a bad argument */
        return PX_ERR_USAGE;
    }
    px_export_opts o = {.plan_path = plan_path, .execute_path = execute_path};
    px_buf b = {0};
    px_status st = px_export_render(plan, t, &o, &b, err);
    if (st == PX_OK && (b.failed || !b.data))
        st = PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the export");
    if (st == PX_OK)
        *text = strndup(b.data, b.len);
    if (st == PX_OK && !*text)
        st = PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the export");
    px_buf_free(&b);
    return st;
}

/* build/execute beside the program argv0, for the slurm script. */
static void execute_beside(const char *argv0, char *out, size_t n)
{
    char self[PATH_MAX];
    if (!realpath(argv0, self))
        snprintf(self, sizeof self, "%s", argv0);
    char *slash = strrchr(self, '/');
    if (slash)
        snprintf(out, n, "%.*s/execute", (int)(slash - self), self);
    else
        snprintf(out, n, "execute");
}

/* Reads the plan of c and writes its export to c->out or out. */
static px_status run_export(const export_cli *c, const char *argv0, FILE *out, px_error *err)
{
    px_plan *plan = calloc(1, sizeof *plan); /* large: not on the stack */
    if (!plan)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the plan");
    char plan_abs[PATH_MAX], exe[PATH_MAX + 16];
    char *text = NULL;
    px_status st = c->out && strcmp(c->out, "-") ? px_io_check_option("-o", c->out, false, err) : PX_OK;
    if (st == PX_OK)
        st = px_plan_read(c->plan, plan, err);
    if (st == PX_OK) {
        if (!realpath(c->plan, plan_abs))
            snprintf(plan_abs, sizeof plan_abs, "%s", c->plan);
        execute_beside(argv0, exe, sizeof exe);
        st = px_export_text(plan, c->to, plan_abs, exe, &text, err);
    }
    if (st == PX_OK && c->out)
        st = px_write_file_atomic(c->out, text, strlen(text), err);
    else if (st == PX_OK && fputs(text, out) == EOF)
        st = PX_FAIL(err, PX_ERR_IO, "writing the export failed");
    free(text);
    free(plan);
    return st;
}

px_status px_export_command(int argc, char **argv, FILE *out, px_error *err)
{
    px_error_clear(err);
    export_cli c = {0};
    px_args_result args;
    px_status st = px_args_parse(export_rows, N_EXPORT_ROWS, argc, argv, &c, 0, &args, err);
    if (st != PX_OK)
        return st;
    px_args_free(&args);
    if (args.action == PX_ARGS_HELP) {
        fputs(usage_text, out);
        return PX_OK;
    }
    if (args.action == PX_ARGS_VERSION) {
        fprintf(out, "export (parallax) %s\n", px_version());
        return PX_OK;
    }
    if (!c.plan)
        return PX_FAIL(err, PX_ERR_USAGE, "--plan is required (a plan file written by `plan -o`)");
    if (!c.to)
        return PX_FAIL(err, PX_ERR_USAGE,
                       "--to is required: megatron, nemo, torchtitan, deepspeed or slurm");
    return run_export(&c, argc > 0 ? argv[0] : "export", out, err);
}
