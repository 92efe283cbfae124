/* px_caps.h — what a consumer of plans can run: the planner's search under a
 * framework profile (frameworks/), the CPU executor, the CUDA executor, an
 * exporter.  One function, px_plan_check (px_plan_check.h), decides whether a
 * model and a parallel configuration are legal for a capability set; every
 * other module asks it rather than restating a rule. */
#ifndef PX_CAPS_H
#define PX_CAPS_H

#include <stdbool.h>

#include "px_plan.h"
#include "px_precision.h"

#define PX_ZERO_STAGES 4      /* ZeRO / FSDP stages 0..3 */
#define PX_CP_FLAVOUR_COUNT 3 /* the bits of px_cp_flavour */
#define PX_FEAT_COUNT 9       /* the bits of px_model_feature */

/* Context-parallel attention flavours (bits of px_caps.cp_flavours). */
typedef enum {
    PX_CP_RING_P2P = 1 << 0,   /* KV blocks passed around a ring (Megatron "p2p") */
    PX_CP_ALL_GATHER = 1 << 1, /* KV all-gathered per layer (Megatron "all_gather", Llama 3) */
    PX_CP_ALL_TO_ALL = 1 << 2  /* heads <-> sequence all-to-all (Ulysses, Megatron "a2a") */
} px_cp_flavour;

/* Model features a consumer may or may not run (bits of px_caps.model_features). */
typedef enum {
    PX_FEAT_MLA = 1 << 0,            /* multi-head latent attention */
    PX_FEAT_QK_NORM = 1 << 1,        /* per-head RMSNorm on q and k */
    PX_FEAT_SHARED_EXPERTS = 1 << 2, /* always-active experts beside the routed ones */
    PX_FEAT_DENSE_FIRST = 1 << 3,    /* leading dense layers in an MoE model */
    PX_FEAT_MTP = 1 << 4,            /* multi-token-prediction modules */
    PX_FEAT_MOE = 1 << 5,            /* routed experts at all */
    PX_FEAT_GPT_BLOCK = 1 << 6,      /* LayerNorm / GeLU / learned positions */
    PX_FEAT_LLAMA_BLOCK = 1 << 7,    /* RMSNorm / SwiGLU / RoPE */
    PX_FEAT_MAMBA = 1 << 8           /* a hybrid layer pattern with Mamba-2 layers */
} px_model_feature;
_Static_assert(PX_CP_ALL_TO_ALL == 1 << (PX_CP_FLAVOUR_COUNT - 1), "PX_CP_FLAVOUR_COUNT");
_Static_assert(PX_FEAT_MAMBA == 1 << (PX_FEAT_COUNT - 1), "PX_FEAT_COUNT");

typedef struct {
    char name[32];                       /* "parallax", "megatron", "cpu-executor", ... */
    char source[256];                    /* the file given by path they were read from;
                                          * "": a shipped framework, by name */
    bool schedules[PX_SCHED_COUNT];      /* pipeline schedules it runs */
    bool recompute[PX_RECOMPUTE_COUNT];  /* uniform recompute modes it runs */
    bool per_layer_recompute;            /* a recompute choice per layer */
    bool block_recompute;                /* full recompute of the first N layers of every
                                          * pipeline chunk, none for the rest
                                          * (px_parallel_block_recompute) */
    bool uneven_stages;                  /* layers per pipeline chunk may differ */
    bool uneven_virtual_chunks;          /* interleaved chunks of unequal size */
    bool zero[PX_ZERO_STAGES];           /* ZeRO / FSDP stages 0..3 it runs */
    bool hybrid_shard;                   /* shard within groups, replicate across */
    bool sp;                             /* sequence parallelism with TP */
    bool tp_without_sp;                  /* TP with SP off */
    bool ep;                             /* expert parallelism */
    bool etp;                            /* expert tensor parallelism != tp */
    unsigned cp_flavours;                /* px_cp_flavour bits; 0: no CP */
    int cp_default;                      /* the px_cp_flavour a plan runs unless told: the
                                          * first cp_flavours lists */
    bool grad_bf16;                      /* bf16 main gradients */
    bool pads_vocab;                     /* pads the vocabulary to a multiple of
                                          * vocab_pad_multiple * tp (Megatron); else
                                          * the vocabulary must divide by tp */
    int vocab_pad_multiple;              /* 128 in Megatron (--make-vocab-size-divisible-by) */
    bool needs_flash_attention;          /* cannot store the s x s scores */
    unsigned precisions;                 /* PX_PREC_BIT mask */
    unsigned model_features;             /* px_model_feature bits */
    int max_pp;                          /* largest pipeline size it runs; 0: no limit,
                                          * 1: no pipeline parallelism (FSDP-only stacks) */
    bool zb_virtual_chunks;              /* zb-h1 over vpp > 1 chunks per stage */
    bool moe_gpt_block;                  /* experts in GPT (LayerNorm/GeLU) blocks */
    int max_zero_with_pp;                /* highest ZeRO stage it runs with pp > 1 (3: any;
                                          * DeepSpeed's pipeline engine: 1) */
    bool ddp_1d_only;                    /* ZeRO-0 (replicated data parallelism, DDP) only as
                                          * the one parallel dimension: with TP, PP or EP
                                          * beside DP > 1, or with any CP, it shards instead
                                          * (torchtitan) */
    bool tp_with_pp;                     /* tensor and pipeline parallelism together (not
                                          * DeepSpeed: AutoTP has no pipeline axis) */
    bool empty_end_chunks;               /* the first / last pipeline chunk may hold no
                                          * layer (only the embedding / the loss) */
    unsigned finetune;                   /* px_ft_mode bits of the fine-tuning it runs
                                          * (pre-training is run by every consumer) */
    bool offload_optimizer;              /* optimizer state and its Adam step on the host
                                          * (ZeRO-Offload, --optimizer-cpu-offload) */
    bool offload_fraction;               /* only a fraction of it (Megatron-Core's
                                          * --optimizer-offload-fraction) */
    bool offload_params;                 /* the ZeRO-3 shards of parameters and gradients
                                          * and the optimizer on the host (DeepSpeed's
                                          * offload_param, FSDP2's CPUOffloadPolicy) */
    bool offload_params_sharded;         /* only over a shard group of more than one rank
                                          * (torchtitan applies FSDP2, and its offload
                                          * policy, only when dp_shard > 1) */
    bool moe_deepep, moe_hybridep;       /* dispatches routed tokens with DeepEP / HybridEP
                                          * (Megatron-Core's flex dispatcher) */
    bool recompute_modules;              /* selective recompute of a chosen list of a layer's
                                          * parts (Megatron-Core's --recompute-modules);
                                          * false: its selective reruns the attention core */
    bool recompute_modules_quantized;    /* ... and moe_act / layernorm with quantised
                                          * GEMMs other than delayed-scaling FP8 */
    bool tp_comm_overlap;                /* runs the forward's sequence-parallel TP collectives
                                          * in chunks under their GEMMs (px_parallel) */
    bool moe_a2a_overlap;                /* runs one micro-batch's EP all-to-all under another's
                                          * compute (Megatron-Core's
                                          * --overlap-moe-expert-parallel-comm) */
    int offload_activations;             /* px_act_offload_mode: which layers' activations it
                                          * offloads, under which conditions (px_offload.h) */
    int fp8_runs_as;                     /* px_precision a plain "fp8" request runs as where
                                          * the framework has no delayed scaling (torchao's
                                          * float8 is dynamic per-tensor: fp8-cs); a
                                          * precision that is not low: "fp8" as it is */
} px_caps;

#endif
