/* export_main.c — the `export` tool: a plan file as the launch configuration
 * of a training framework (docs/export.md). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_export.h"

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
    "  -o FILE       write there (atomically); default: standard output\n"
    "  --help        this text\n";

static void die_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "export: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(export --help lists the options)\n");
    exit(2);
}

static void die_error(const px_error *err)
{
    char buf[2048];
    px_error_format(err, buf, sizeof buf);
    fprintf(stderr, "export: error: %s\n", buf);
    exit(1);
}

typedef struct {
    const char *plan, *to, *out;
} cli;

static void set_once(const char **slot, const char *flag, const char *v)
{
    if (*slot)
        die_usage("%s given more than once: give it once", flag);
    if (!v)
        die_usage("%s needs a value", flag);
    *slot = v;
}

static void parse_args(int argc, char **argv, cli *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            exit(0);
        }
        char flag[32];
        const char *v = NULL, *eq = strchr(a, '=');
        if (a[0] == '-' && a[1] == '-' && eq) {
            snprintf(flag, sizeof flag, "%.*s", (int)(eq - a), a);
            v = eq + 1;
        } else {
            snprintf(flag, sizeof flag, "%s", a);
            if (i + 1 < argc)
                v = argv[++i];
        }
        if (!strcmp(flag, "--plan"))
            set_once(&c->plan, "--plan", v);
        else if (!strcmp(flag, "--to"))
            set_once(&c->to, "--to", v);
        else if (!strcmp(flag, "-o") || !strcmp(flag, "--output"))
            set_once(&c->out, "-o", v);
        else if (a[0] == '-')
            die_usage("unknown option \"%s\"", flag);
        else
            die_usage("unexpected argument \"%s\"", a);
    }
    if (!c->plan)
        die_usage("%s", "--plan is required (a plan file written by `plan -o`)");
    if (!c->to)
        die_usage("%s", "--to is required: megatron, nemo, torchtitan, deepspeed or slurm");
}

/* build/execute beside this program, for the slurm script. */
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

int main(int argc, char **argv)
{
    cli c;
    parse_args(argc, argv, &c);
    px_error err;
    px_error_clear(&err);
    px_export_target t;
    if (px_export_target_parse(c.to, &t, &err) != PX_OK) {
        fprintf(stderr, "export: error: %s\n", err.msg);
        return 2;
    }
    static px_plan plan; /* large: not on the stack */
    if (px_plan_read(c.plan, &plan, &err) != PX_OK)
        die_error(&err);
    char plan_abs[PATH_MAX], exe[PATH_MAX + 16];
    if (!realpath(c.plan, plan_abs))
        snprintf(plan_abs, sizeof plan_abs, "%s", c.plan);
    execute_beside(argv[0], exe, sizeof exe);
    px_export_opts o = {.plan_path = plan_abs, .execute_path = exe};
    px_buf b = {0};
    if (px_export_render(&plan, t, &o, &b, &err) != PX_OK)
        die_error(&err);
    if (px_buf_write(&b, c.out ? c.out : "-", &err) != PX_OK)
        die_error(&err);
    px_buf_free(&b);
    if (c.out)
        fprintf(stderr, "export: wrote %s (%s)\n", c.out, px_export_target_name(t));
    return 0;
}
