/* px_export_slurm.c — a plan as an sbatch script that runs it with
 * Parallax's own executor (docs/export.md). */
#include "px_export_formats.h"

#include <string.h>

/* s as one single-quoted shell word ('\'' for each quote inside). */
static void sh_word(px_buf *b, const char *s)
{
    px_buf_puts(b, "'");
    for (; *s; s++) {
        if (*s == '\'')
            px_buf_puts(b, "'\\''");
        else {
            char c[2] = {*s, '\0'};
            px_buf_puts(b, c);
        }
    }
    px_buf_puts(b, "'");
}

px_status px_export_slurm(const px_plan *plan, const px_export_opts *o, px_buf *b,
                          px_error *err)
{
    (void)err;
    plan_facts f;
    px_export_facts_of(plan, &f);
    char name[64];
    px_export_safe_name(plan->model.name, name, sizeof name);
    bool gpu = plan->hw.dtype_bytes == 2; /* datasheet GPU profiles; calibrated CPUs are fp32 */
    px_buf_printf(b, "#!/bin/bash\n"
                     "# Runs a Parallax plan (%s on %d %s) with Parallax's own executor and\n"
                     "# writes measured vs predicted (compare reads the report).  docs/export.md\n"
                     "#SBATCH --job-name=parallax-%s\n"
                     "#SBATCH --nodes=%d\n",
                  name, f.gpus, gpu ? "GPUs" : "ranks", name, f.nodes);
    if (f.per_node)
        px_buf_printf(b, "#SBATCH --ntasks-per-node=%d\n", f.per_node);
    else
        px_buf_printf(b, "#SBATCH --ntasks=%d\n", f.gpus);
    if (gpu && f.per_node)
        px_buf_printf(b, "#SBATCH --gpus-per-node=%d\n", f.per_node);
    else if (gpu)
        px_buf_printf(b, "#SBATCH --gpus-per-task=1\n");
    px_buf_printf(b, "#SBATCH --exclusive\n#SBATCH --time=01:00:00\n"
                     "set -euo pipefail\n");
    px_buf_puts(b, "PLAN=${PARALLAX_PLAN:-");
    sh_word(b, o && o->plan_path ? o->plan_path : "plan.json");
    px_buf_puts(b, "}\nEXECUTE=${PARALLAX_EXECUTE:-");
    sh_word(b, o && o->execute_path ? o->execute_path : "build/execute");
    px_buf_printf(b, "}\nsrun --mpi=pmix \"$EXECUTE\" --plan \"$PLAN\" --backend %s --steps 10 "
                     "--warmup 2 \\\n"
                     "  --report \"parallax-report-${SLURM_JOB_ID:-local}.json\"\n",
                  gpu ? "cuda" : "cpu");
    return PX_OK;
}
