/* px_export_formats.h — the file formats of px_export (one writer a
 * target); px_export.c checks the plan against the target first. */
#ifndef PX_EXPORT_FORMATS_H
#define PX_EXPORT_FORMATS_H

#include "px_export.h"

#include <stdbool.h>
#include <stddef.h>

/* The framework releases the exports are checked against
 * (tests/export_real/, docs/export.md). */
#define PX_EXPORT_MEGATRON_LM_COMMIT "d98e8a64ddf34856e74b24714e3bedb2f5a39553"
#define PX_EXPORT_MEGATRON_CORE "0.20.0"
#define PX_EXPORT_MEGATRON_BRIDGE "0.3.1"
#define PX_EXPORT_BRIDGE_CORE "0.16.1"

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
/* Megatron's --pipeline-model-parallel-layout: one `|`-separated part a
 * chunk in model order, E the embedding, t a layer, m a multi-token
 * prediction layer (in the last chunk, after the layers), L the loss. */
void px_export_layout(const px_plan *plan, px_buf *b);
/* Megatron's --fp8-format / --fp8-recipe of a precision (NULL: not fp8). */
const char *px_export_fp8_format(px_precision p);
const char *px_export_fp8_recipe(px_precision p);
/* Megatron-LM's --cp-comm-type of the plan's CP flavour. */
const char *px_export_cp_comm_type(px_cp_comm c);
/* Megatron's distributed-optimizer instances for a hybrid-sharded plan:
 * the dp·cp ranks over the shard group (1: no hybrid sharding). */
int px_export_optimizer_instances(const px_parallel *p);
/* N of full recompute of the first N layers of every chunk, or -1. */
int px_export_block_recompute_layers(const px_plan *plan);
/* Writes a refusal's reason (printf-style) into why and returns true: the
 * writers' version checks read "return px_export_because(why, n, ...)". */
bool px_export_because(char *why, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The launch lines as comments: torchrun on every node with a c10d
 * rendezvous, and srun with one task a GPU and the ranks in the
 * environment; `command` is the script and its arguments (no single quotes). */
void px_export_launch(const px_plan *plan, const plan_facts *f, const char *command, px_buf *b);

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
