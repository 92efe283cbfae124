/* px_plan.h — a parallel configuration, the cost model's prediction for it, and
 * the plan that `plan -o` writes and `execute` reads (schema:
 * docs/plan-schema.md, docs/plan.schema.json). */
#ifndef PX_PLAN_H
#define PX_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "px_error.h"
#include "px_finetune.h"
#include "px_offload.h"
#include "px_hw.h"
#include "px_model.h"
#include "px_precision.h"

typedef enum {
    PX_SCHED_GPIPE = 0,
    PX_SCHED_1F1B,
    PX_SCHED_INTERLEAVED, /* interleaved 1F1B, vpp > 1 */
    PX_SCHED_ZB_H1,
    PX_SCHED_ZB_H2,
    PX_SCHED_COUNT
} px_schedule;

typedef enum {
    PX_RECOMPUTE_NONE = 0,
    PX_RECOMPUTE_SELECTIVE, /* attention core only (FlashAttention-equivalent) */
    PX_RECOMPUTE_FULL,      /* keep each layer's input, rerun the layer */
    PX_RECOMPUTE_COUNT
} px_recompute;

const char *px_schedule_name(px_schedule s);            /* "1f1b", "gpipe", ... */
px_status px_schedule_parse(const char *s, px_schedule *out, px_error *err);
const char *px_recompute_name(px_recompute r);          /* "none", "selective", "full" */
px_status px_recompute_parse(const char *s, px_recompute *out, px_error *err);

/* Context-parallel attention communication; 1 << value is the matching
 * px_cp_flavour bit of px_caps.h. */
typedef enum {
    PX_CPC_P2P = 0,   /* ring: KV blocks passed to the next rank, overlapped (Megatron "p2p") */
    PX_CPC_ALLGATHER, /* KV all-gathered before the attention (Megatron "all_gather", Llama 3) */
    PX_CPC_A2A,       /* heads <-> sequence all-to-all around the attention (Ulysses, "a2a") */
    PX_CPC_COUNT
} px_cp_comm;

extern const char *const px_cp_comm_names[PX_CPC_COUNT];
const char *px_cp_comm_name(px_cp_comm c); /* "p2p", "all-gather", "a2a" */
px_status px_cp_comm_parse(const char *s, px_cp_comm *out, px_error *err);

/* How the routed tokens reach their experts' ranks (Megatron-Core's
 * --moe-token-dispatcher-type and --moe-flex-dispatcher-backend). */
typedef enum {
    PX_MOE_ALLTOALL = 0, /* NCCL all-to-all of every routed copy ("alltoall") */
    PX_MOE_DEEPEP,       /* "flex" with DeepEP: a token crosses to each node hosting
                          * its experts once, then NVLink forwards its copies */
    PX_MOE_HYBRIDEP,     /* "flex" with HybridEP: the same, NVIDIA's kernels */
    PX_MOE_DISPATCH_COUNT
} px_moe_dispatch;

extern const char *const px_moe_dispatch_names[PX_MOE_DISPATCH_COUNT];
const char *px_moe_dispatch_name(px_moe_dispatch d); /* "alltoall", "deepep", "hybridep" */
px_status px_moe_dispatch_parse(const char *s, px_moe_dispatch *out, px_error *err);

/* The fused attention kernel a run trains with (px_parallel.attn_kernel).
 * Its rate relative to the GPU's own kernels: px_attn_eff.h. */
typedef enum {
    PX_AK_FRAMEWORK = 0, /* the framework profile's (its flash_attention_version) */
    PX_AK_NATIVE,        /* the GPU generation's own: cuDNN fused attention, FA3 on
                          * Hopper, FA4 / cuDNN sm100 on Blackwell */
    PX_AK_FLASH3,        /* FlashAttention-3 (Hopper only) */
    PX_AK_FLASH2,        /* FlashAttention-2 (Ampere's mma.sync on any GPU) */
    PX_AK_FLASH1,        /* FlashAttention 1 */
    PX_AK_TRITON,        /* FlashAttention in Triton (flash_attn_triton.py): llm-foundry's
                          * attn_impl triton, Megatron-DeepSpeed's --use-flash-attn-triton */
    PX_AK_COUNT
} px_attn_kernel;

extern const char *const px_attn_kernel_names[PX_AK_COUNT];
const char *px_attn_kernel_name(px_attn_kernel k); /* "framework", "native", "flash3", ... */
/* A kernel name, or "unfused" (*unfused = true: no fused kernel, the s x s
 * scores stored; *out = PX_AK_FRAMEWORK). */
px_status px_attn_kernel_parse(const char *s, px_attn_kernel *out, bool *unfused,
                               px_error *err);

/* The parts of a layer selective recompute reruns in place of keeping their
 * activations (Megatron-Core's --recompute-modules; bit 1 << value of
 * px_parallel.recompute_modules).  Output-discarding ones (moe_act,
 * layernorm, mla_up_proj) free one output and recompute it before its
 * consumer's backward; the others keep their input and rerun the module. */
typedef enum {
    PX_RCM_CORE_ATTN = 0, /* the attention core (Korthikanti's selective recompute) */
    PX_RCM_MOE_ACT,       /* the experts' activation function: its output */
    PX_RCM_LAYERNORM,     /* the norms not fused into the next linear: their output */
    PX_RCM_MLA_UP_PROJ,   /* MLA's up-projections and RoPE: q, k and v */
    PX_RCM_MLP,           /* a dense MLP, from its input */
    PX_RCM_MOE,           /* a MoE layer's router, dispatch, experts and combine */
    PX_RCM_SHARED_EXPERTS, /* the shared experts */
    PX_RCM_COUNT
} px_rc_module;

#define PX_RCM_DEFAULT (1u << PX_RCM_CORE_ATTN) /* Megatron-Core's default list */
#define PX_RCM_ALL ((1u << PX_RCM_COUNT) - 1u)

extern const char *const px_rc_module_names[PX_RCM_COUNT];
/* The module named by the len characters at name, or -1. */
int px_rc_module_find(const char *name, size_t len);
/* A comma-separated list of module names into a bit set (no name twice,
 * at least one). */
px_status px_rc_modules_parse(const char *list, unsigned *out, px_error *err);
/* The set as a comma-separated list, in the enum's order ("" for none):
 * the number of characters it needs, as snprintf. */
int px_rc_modules_format(unsigned set, char *buf, size_t n);

#define PX_MAX_CHUNKS 1024 /* pp * vpp */
#define PX_MAX_LAYERS PX_MODEL_MAX_LAYERS

/* How the training step is split.  G = tp * cp * pp * dp.  Experts are laid
 * over the same tp*cp*dp GPUs of a stage as ep * etp * edp (the lecture's 6.4:
 * attention uses TP x CP, experts EP x expert-TP). */
typedef struct {
    int tp, cp, pp, vpp, dp;
    int ep, etp;              /* 1 for dense models */
    bool sp;                  /* sequence parallelism (needs tp > 1) */
    int zero;                 /* 0..3 */
    bool grad_fp32;           /* fp32 main gradients (Megatron default) vs bf16 */
    bool flash_attention;     /* no s x s score matrix stored */
    px_attn_kernel attn_kernel; /* which fused kernel, when flash_attention */
    bool dp_overlap;          /* gradient all-reduce / reduce-scatter runs bucket by bucket
                               * under the backward (PyTorch DDP, Megatron-Core
                               * --overlap-grad-reduce); false: after the backward, as
                               * Megatron-LM's local DDP did until 2023 */
    bool tp_overlap;          /* backward TP collectives run asynchronously under the
                               * weight-/input-gradient GEMMs (Megatron since 2022);
                               * false: each blocks where it is issued */
    bool tp_comm_overlap;     /* with sp and tp > 1: the forward's all-gather and
                               * reduce-scatter run in chunks under the GEMMs they feed
                               * and follow, and so does the backward's all-gather of
                               * the output gradient (Transformer Engine's userbuffers,
                               * Megatron-Core --tp-comm-overlap; torchtitan's async TP);
                               * false: on the critical path, both frameworks' default */
    px_moe_dispatch moe_dispatcher; /* how the routed tokens travel */
    bool moe_a2a_overlap;     /* the EP dispatch / combine all-to-all of one micro-batch
                               * under another micro-batch's compute (Megatron-Core
                               * --overlap-moe-expert-parallel-comm); false: each layer
                               * waits for its all-to-all */
    px_schedule schedule;
    px_recompute recompute;   /* uniform choice; per_layer overrides when set */
    unsigned recompute_modules; /* bits of px_rc_module: what a selective layer reruns
                                 * (PX_RCM_DEFAULT: the attention core) */
    int64_t micro_batch;      /* b, sequences */
    int64_t n_micro;          /* m, micro-batches per step per DP replica */
    int64_t seq_len;          /* s */
    px_precision precision;   /* number format of the transformer layers' GEMMs */
    px_cp_comm cp_comm;       /* how CP attention exchanges keys and values */
    bool quantized_params;    /* low precision: the linear weights are kept quantised (in
                               * place of their bf16 copy) and gathered quantised by ZeRO
                               * / FSDP (NeMo's fp8_params); false: bf16 weights with a
                               * cached quantised copy, bf16 gathers */
    char order[32];           /* rank order, innermost first: "tp-cp-ep-pp-dp" */

    /* Per pipeline chunk (pp*vpp, in model order), layer counts; 0 entries
     * (n_chunks == 0) mean a uniform split. */
    int n_chunks;
    int layers_per_chunk[PX_MAX_CHUNKS];
    /* Per layer recompute choice; n_layer_recompute == 0 means uniform. */
    int n_layer_recompute;
    unsigned char layer_recompute[PX_MAX_LAYERS];
    /* ZeRO-3 / FSDP hybrid sharding: parameters, gradients and optimizer
     * state sharded within groups of this many data-parallel ranks and
     * replicated across the groups (HSDP); 0 = shard over the whole dp·cp
     * group. */
    int shard_group;
    /* What is trained: pre-training, SFT or LoRA adapters (px_finetune.h). */
    px_finetune finetune;
    /* What lives in host memory: the optimizer's share (px_offload.h). */
    px_offload offload;
} px_parallel;

/* Sets every field to the single-GPU defaults (all sizes 1, 1F1B, ZeRO 0,
 * FlashAttention on, fp32 grads, order "tp-cp-ep-pp-dp"). */
void px_parallel_init(px_parallel *p);

/* Global batch in sequences: b * m * dp. */
int64_t px_parallel_global_batch(const px_parallel *p);
int px_parallel_gpus(const px_parallel *p);

/* Layers of pipeline chunk c: the recorded split, else the even one (a
 * split whose layers do not divide is always recorded). */
int px_parallel_chunk_layers(const px_parallel *p, int64_t n_layers, int c);

/* Megatron's block recompute (--recompute-method block --recompute-num-layers
 * N, megatron/core/recompute.py): full recompute of the first min(N, c)
 * layers of every pipeline chunk of c layers, none for the rest.  Returns
 * that N when the per-layer choices have this form (0: every layer none),
 * -1 otherwise.  n_layers: the model's. */
int px_parallel_block_recompute(const px_parallel *p, int64_t n_layers);

/* Writes that pattern for N (0 .. the longest chunk) into the per-layer
 * choices. */
void px_parallel_set_block_recompute(px_parallel *p, int64_t n_layers, int n);

/* Memory per GPU, bytes, on the stage that needs most. */
typedef struct {
    int64_t weights;
    int64_t grads;
    int64_t optimizer;
    int64_t activations;      /* transformer layers, in flight under the schedule */
    int64_t act_attention;    /* breakdown of one layer-set's activations */
    int64_t act_mlp;
    int64_t act_norm;
    int64_t buffers;          /* embedding output, logits, loss, p2p, comm buckets */
    int64_t allocated;        /* the tensors above: the allocator's allocated peak */
    /* What the runtime takes beside the tensors (px_cost_runtime.h); 0 without
     * a framework profile */
    int64_t workspace;        /* library workspaces (cuBLAS, cuBLASLt, TE) */
    int64_t allocator_cache;  /* cached, unallocated blocks of the caching allocator */
    int64_t runtime_context;  /* the CUDA context and loaded kernel modules */
    int64_t nccl;             /* NCCL communicators' device buffers */
    int nccl_comms;           /* communicators one rank holds */
    int64_t total;            /* what must fit: allocated + workspace + runtime_context +
                               * nccl (the cache is released before an allocation
                               * fails) */
    int worst_stage;
    int64_t host;             /* host memory per GPU: the offloaded optimizer share and its
                               * fp32 gradient copy, and offloaded activations (not in
                               * total, which is device memory) */
    int64_t host_activations; /* of host, the offloaded activations */
} px_memory;

/* What PyTorch's caching allocator reports as its reserved peak
 * (torch.cuda.max_memory_reserved; torchtitan logs it): the tensors, the
 * library workspaces it hands out and its cached blocks, not the CUDA
 * context nor NCCL's buffers. */
static inline int64_t px_memory_reserved(const px_memory *m)
{
    return m->allocated + m->workspace + m->allocator_cache;
}

/* Time of one optimizer step, seconds; exposed parts are on the critical path. */
typedef struct {
    double step_s;
    double compute_s;         /* forward + backward (+ recompute) of all micro-batches */
    double recompute_s;
    double tp_comm_s;         /* exposed */
    double cp_comm_s, cp_comm_total_s;
    double ep_comm_s;
    double pp_comm_s;
    double dp_comm_s, dp_comm_total_s;
    double bubble_s;
    double optimizer_s;       /* the step's optimizer, with offload_s */
    double offload_s;         /* of it, the offloaded share's: gradients to the host, the
                               * host's Adam step, weights back (0 without offload) */
    double act_offload_s;     /* activation copies to the host and back, exposed (in
                               * compute's micro-batches; 0 without activation offload) */
} px_time;

typedef struct {
    px_memory mem;
    px_time time;
    double model_flops_per_step;  /* px_flops_model_per_step */
    double hw_flops_per_step;     /* with recomputation */
    double tokens_per_s;
    double mfu;
    double hfu;
    double mfu_causal;            /* attention counted as executed (causal / windowed)
                                   * rather than as the full s x s product */
    double bubble_fraction;       /* of the step */
    /* Time to train and goodput (0 when --tokens not given) */
    double train_tokens;
    double days_to_train;
    double ckpt_bytes_per_gpu;
    double ckpt_write_s;
    double ckpt_interval_s;       /* Young/Daly */
    double job_mtbf_s;
    double lost_fraction;
    double goodput_days;
} px_prediction;

/* The cost model's prediction for one pipeline stage, per GPU of the stage
 * (px_plan_predict.h fills it): memory by kind (bytes; the parts and the runtime's
 * share sum to total_bytes, and the worst stage's equal px_prediction.mem) and the time
 * of one micro-batch through the stage (forward + backward + recompute +
 * exposed TP/CP/EP communication + embedding / head), seconds. */
typedef struct {
    int layers;                   /* transformer layers over the stage's vpp chunks */
    int64_t weights, grads, optimizer, activations, buffers, total;
    int64_t runtime;              /* the runtime's share beside the tensors (workspaces,
                                   * allocator cache, CUDA context, NCCL); in total */
    double microbatch_s;
} px_stage_prediction;

/* The predicted step time by class, seconds per step, in the classes the
 * executor's tracer times (docs/executor.md): GEMMs, attention cores,
 * element-wise kernels, exposed TP/CP/EP/DP communication, pipeline p2p with
 * the bubble, the optimizer. */
typedef struct {
    double gemm_s, attention_s, elementwise_s, comm_s, p2p_s, optimizer_s;
} px_class_time;

/* A whole plan: what `execute` needs to reproduce the configuration and what
 * it compares against. */
typedef struct {
    int version;                  /* PX_PLAN_VERSION (schema_version in the file) */
    px_model model;
    px_hw hw;
    px_parallel par;
    px_prediction pred;
    /* per pipeline stage, in stage order; n_stages = par.pp, or 0 when the
     * plan carries no prediction (pred all zero) */
    int n_stages;
    px_stage_prediction stages[PX_MAX_CHUNKS];
    px_class_time class_time;
    char framework[32];           /* the framework profile it was planned for
                                   * (frameworks/); "" = not recorded */
} px_plan;

/* 2: schema_version at the root, parallel.num_microbatches / grad_dtype
 * (the spellings of `plan --json`), prediction.stages and time_by_class. */
#define PX_PLAN_VERSION 2

px_status px_plan_write(const px_plan *plan, const char *path, px_error *err);
px_status px_plan_read(const char *path, px_plan *out, px_error *err);

/* The plan as a jansson object (new reference), the same one px_plan_write
 * writes, so `plan --json` can embed it.  Include px_plan_json.h to use it
 * (it brings <jansson.h>; struct json_t is jansson's json_t). */
struct json_t;
px_status px_plan_to_json(const px_plan *plan, struct json_t **out, px_error *err);

#endif
