/* px_offload.h — what a plan keeps in host memory instead of on the GPU.
 * Optimizer offload is how DeepSpeed (ZeRO-Offload, offload_optimizer) and
 * Megatron-Core (--optimizer-cpu-offload, --optimizer-offload-fraction) fit
 * a model on too few GPUs: the fp32 master weights and Adam's moments of a
 * fraction of the optimizer shard live in host memory and the host's cores
 * run their Adam step; each step copies that fraction's gradients to the
 * host and its updated weights back.  Activation offload moves what the
 * layers keep for their backward to host memory during the forward and
 * brings it back for the backward, as the framework runs it
 * (px_act_offload_mode, px_caps.h).  The costs are in docs/cost-model.md,
 * "Offload". */
#ifndef PX_OFFLOAD_H
#define PX_OFFLOAD_H

#include <stdbool.h>

#include "px_error.h"

typedef enum {
    PX_OFFLOAD_NONE = 0,  /* everything on the GPU */
    PX_OFFLOAD_OPTIMIZER, /* master weights + Adam moments (a fraction) on the host */
    PX_OFFLOAD_PARAMS,    /* the ZeRO-3 shards of the parameters and gradients too: the
                           * device gathers each layer from the host (DeepSpeed's
                           * offload_param with offload_optimizer, FSDP2's
                           * CPUOffloadPolicy) */
    PX_OFFLOAD_COUNT
} px_offload_kind;

/* How a framework offloads activations (capabilities.offload_activations). */
typedef enum {
    PX_ACT_OFFLOAD_NONE = 0, /* it does not */
    PX_ACT_OFFLOAD_LEADING,  /* the first N layers of the model, N below the layer count,
                              * without a pipeline or recompute (Megatron-Core's
                              * --cpu-offloading-num-layers) */
    PX_ACT_OFFLOAD_EVERY,    /* every layer's saved tensors (PyTorch's save_on_cpu around
                              * each block: Composer's activation_cpu_offload) */
    PX_ACT_OFFLOAD_CHECKPOINTS, /* every layer's checkpointed input, under full recompute
                                 * (DeepSpeed's cpu_checkpointing) */
    PX_ACT_OFFLOAD_COUNT
} px_act_offload_mode;

/* Not a profile's value: the planner's own capability set, which prices
 * every mode (a count of leading layers, or every layer). */
#define PX_ACT_OFFLOAD_ANY PX_ACT_OFFLOAD_COUNT

typedef struct {
    px_offload_kind kind;
    double fraction;     /* share of the optimizer shard on the host, (0, 1]; 1 for DeepSpeed */
    bool activations;    /* the layers' saved activations on the host */
    int act_layers;      /* of them, the first act_layers layers only (leading mode); 0:
                          * every layer, or the search's least that fits (leading mode) */
} px_offload;

/* Nothing offloaded (fraction 1, ready for --offload optimizer). */
void px_offload_init(px_offload *o);

static inline bool px_offload_any(const px_offload *o)
{
    return o->kind != PX_OFFLOAD_NONE || o->activations;
}

/* The share of the optimizer state on the host (parameter offload moves all
 * of it). */
static inline double px_offload_host_share(const px_offload *o)
{
    return o->kind == PX_OFFLOAD_OPTIMIZER ? o->fraction : o->kind == PX_OFFLOAD_PARAMS ? 1.0 : 0.0;
}

const char *px_offload_kind_name(px_offload_kind k); /* "none", "optimizer", "params" */

/* "none", "leading_layers", "every_layer", "checkpoints" */
extern const char *const px_act_offload_mode_names[PX_ACT_OFFLOAD_COUNT];

/* Parses a kind: "none", "optimizer" or "params". */
px_status px_offload_kind_parse(const char *s, px_offload_kind *out, px_error *err);

/* Parses what --offload names: "none", or a comma-separated list of
 * "optimizer" or "params" (which holds the optimizer) and "activations",
 * each once, into o's kind and activations (fraction and act_layers
 * untouched). */
px_status px_offload_parse_list(const char *s, px_offload *o, px_error *err);

#endif
