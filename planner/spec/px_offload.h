/* px_offload.h — what a plan keeps in host memory instead of on the GPU.
 * Optimizer offload is how DeepSpeed (ZeRO-Offload, offload_optimizer) and
 * Megatron-Core (--optimizer-cpu-offload, --optimizer-offload-fraction) fit
 * a model on too few GPUs: the fp32 master weights and Adam's moments of a
 * fraction of the optimizer shard live in host memory and the host's cores
 * run their Adam step; each step copies that fraction's gradients to the
 * host and its updated weights back.  The costs are in docs/cost-model.md,
 * "Offload". */
#ifndef PX_OFFLOAD_H
#define PX_OFFLOAD_H

#include <stdbool.h>

#include "px_error.h"

typedef enum {
    PX_OFFLOAD_NONE = 0,  /* everything on the GPU */
    PX_OFFLOAD_OPTIMIZER, /* master weights + Adam moments (a fraction) on the host */
    PX_OFFLOAD_COUNT
} px_offload_kind;

typedef struct {
    px_offload_kind kind;
    double fraction; /* share of the optimizer shard on the host, (0, 1]; 1 for DeepSpeed */
} px_offload;

/* Nothing offloaded (fraction 1, ready for --offload optimizer). */
void px_offload_init(px_offload *o);

static inline double px_offload_host_share(const px_offload *o)
{
    return o->kind == PX_OFFLOAD_OPTIMIZER ? o->fraction : 0.0;
}

const char *px_offload_kind_name(px_offload_kind k); /* "none", "optimizer" */

/* Parses a kind.  "params" (ZeRO-Infinity's parameter offload) and
 * "activations" (CPU activation offload) are refused by name: their costs
 * are not modelled. */
px_status px_offload_kind_parse(const char *s, px_offload_kind *out, px_error *err);

#endif
