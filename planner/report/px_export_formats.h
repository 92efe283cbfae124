/* px_export_formats.h — the file formats of px_export (one writer a
 * target); px_export.c checks the plan against the target first. */
#ifndef PX_EXPORT_FORMATS_H
#define PX_EXPORT_FORMATS_H

#include "px_export.h"

#include <stdbool.h>
#include <stddef.h>

/* ---- what the writers share (px_export_formats.c) ---- */

typedef struct {
    int64_t seq, gbatch, layers_per_chunk;
    int gpus, nodes, per_node; /* per_node 0: the GPUs do not fill whole nodes */
    bool uneven;               /* layers per stage differ (vpp 1) */
    int first_layers, last_layers;
    px_recompute recompute;    /* uniform choice */
    bool bf16;                 /* the profile's compute dtype */
} plan_facts;

void px_export_facts_of(const px_plan *plan, plan_facts *f);
/* A name safe inside comments, YAML and shell words: [A-Za-z0-9._-]. */
void px_export_safe_name(const char *s, char *out, size_t n);
/* Megatron names a split by its first and last stage when the middle
 * stages hold equal counts (vpp 1); any other split is a layout string. */
bool px_export_first_last_split(const px_parallel *p);
bool px_export_recompute_mixed(const px_parallel *p);
/* N of full recompute of the first N layers of every chunk, or -1. */
int px_export_block_recompute_layers(const px_plan *plan);

/* What a format cannot express although the framework runs it in general
 * (a split Megatron cannot name, ZeRO-2/3 beside DeepSpeed's pipeline...). */
px_status px_export_format_check(const px_plan *plan, px_export_target t, px_error *err);
/* Why torchtitan 0.2.2's job file / DeepSpeed 0.19.8's config cannot say the
 * plan (the feature, in words, into why), or false; px_export_check asks them
 * after px_export_format_check (px_export.c). */
bool px_export_torchtitan_refusal(const px_plan *plan, char *why, size_t n);
bool px_export_deepspeed_refusal(const px_plan *plan, char *why, size_t n);

px_status px_export_megatron(const px_plan *plan, const px_export_opts *o, px_buf *b,
                             px_error *err);
px_status px_export_nemo(const px_plan *plan, px_buf *b, px_error *err);
px_status px_export_torchtitan(const px_plan *plan, px_buf *b, px_error *err);
px_status px_export_deepspeed(const px_plan *plan, px_buf *b, px_error *err);
px_status px_export_slurm(const px_plan *plan, const px_export_opts *o, px_buf *b,
                          px_error *err);

#endif
