/* px_export_target.c — the export targets' names: printing one and parsing
 * --to.  Below both px_export.c (what each target runs) and
 * px_export_formats.c (the files), which name targets in their errors. */
#include "px_export.h"

#include <stddef.h>
#include <strings.h>

static const char *const target_names[PX_EXPORT_COUNT] = {"megatron", "nemo", "torchtitan",
                                                          "deepspeed", "slurm"};

const char *px_export_target_name(px_export_target t)
{
    return t >= 0 && t < PX_EXPORT_COUNT ? target_names[t] : "?";
}

px_status px_export_target_parse(const char *s, px_export_target *out, px_error *err)
{
    for (int t = 0; t < PX_EXPORT_COUNT; t++)
        if (!strcasecmp(s, target_names[t])) {
            *out = (px_export_target)t;
            return PX_OK;
        }
    static const char *const no_exporter[] = {"llm-foundry", "maxtext", "parallax"};
    for (size_t i = 0; i < sizeof no_exporter / sizeof no_exporter[0]; i++)
        if (!strcasecmp(s, no_exporter[i]))
            return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                           "--to %s: %s has no exporter; allowed targets are megatron, nemo, "
                           "torchtitan, deepspeed and slurm (Parallax's own executor)",
                           s, no_exporter[i]);
    return PX_FAIL(err, PX_ERR_INVALID,
                   "--to \"%s\": allowed targets are megatron, nemo, torchtitan, deepspeed, slurm",
                   s);
}
