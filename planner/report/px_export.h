/* px_export.h — a plan as the launch configuration of a training framework
 * (`build/export`, docs/export.md): Megatron-LM's pretrain_gpt.py arguments,
 * a Megatron-Bridge / NeMo 2 recipe override (YAML), a torchtitan job
 * (TOML), a DeepSpeed config (JSON), or an sbatch script that runs the plan
 * with Parallax's own executor.  A plan the target cannot run is refused
 * with a message naming the feature (px_export_check). */
#ifndef PX_EXPORT_H
#define PX_EXPORT_H

#include "px_caps.h"
#include "px_error.h"
#include "px_outfile.h"
#include "px_plan.h"

typedef enum {
    PX_EXPORT_MEGATRON = 0,
    PX_EXPORT_NEMO,
    PX_EXPORT_TORCHTITAN,
    PX_EXPORT_DEEPSPEED,
    PX_EXPORT_SLURM,
    PX_EXPORT_COUNT
} px_export_target;

const char *px_export_target_name(px_export_target t); /* "megatron", ... */

/* Parses a target name; a framework without an exporter (llm-foundry,
 * maxtext) is refused by name.  The message lists the targets. */
px_status px_export_target_parse(const char *s, px_export_target *out, px_error *err);

typedef struct {
    const char *plan_path;    /* the plan file, as the slurm script names it */
    const char *execute_path; /* build/execute, for the slurm script */
} px_export_opts;

/* What the target runs (px_caps.h). */
px_status px_export_target_caps(px_export_target t, px_caps *out, px_error *err);

/* PX_OK when the target can run the plan; otherwise PX_ERR_UNSUPPORTED with
 * a message naming the feature and what the target runs instead. */
px_status px_export_check(const px_plan *plan, px_export_target t, px_error *err);

/* Checks, then appends the target's file to out. */
px_status px_export_render(const px_plan *plan, px_export_target t, const px_export_opts *o,
                           px_buf *out, px_error *err);

#endif
