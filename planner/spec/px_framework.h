/* px_framework.h — framework profiles (frameworks/<name>.json; schema:
 * docs/framework-schema.md): what a training framework can run (the shared
 * capability set px_caps) and how it runs it (px_fw_runtime: which
 * collectives it overlaps, how FSDP prefetches and reshards, which kernels
 * it fuses).  `plan --framework NAME` searches only what the framework can
 * run and costs it the way the framework runs it. */
#ifndef PX_FRAMEWORK_H
#define PX_FRAMEWORK_H

#include <stdbool.h>

#include "px_caps.h"
#include "px_error.h"
#include "px_fitted.h"
#include "px_model.h"
#include "px_plan.h"
#include "px_plan_check.h" /* px_model_features */

#define PX_FRAMEWORK_DEFAULT "parallax"

/* How a framework runs a plan; read by the search (overlap, attention) and
 * the cost model (FSDP, fused kernels). */
typedef struct px_fw_runtime {
    bool dp_overlap;                 /* gradient reduction (and ZeRO / FSDP gathers) under
                                      * the compute */
    bool tp_overlap;                 /* backward TP collectives asynchronous under GEMMs */
    int fsdp_prefetch_layers;        /* layers whose parameters are gathered ahead of the
                                      * one computing (ZeRO-3 / FSDP) */
    bool fsdp_reshard_after_forward; /* gathered parameters freed after each layer's
                                      * forward and gathered again for its backward */
    bool fused_attention;            /* FlashAttention-class kernel: no s x s scores */
    bool fused_cross_entropy;        /* logits, softmax and loss in one pass */
    bool fused_norm;                 /* RMSNorm as one kernel each way, not PyTorch's
                                      * composite ops (px_cost_eager_norm_bytes) */
    bool fused_rope;                 /* RoPE as one kernel each way, not PyTorch's
                                      * composite ops (px_cost_eager_rope_bytes) */
    bool fused_swiglu;               /* the gated MLP's activation and product as one
                                      * kernel each way, not PyTorch's composite ops
                                      * (px_cost_eager_swiglu_bytes); optional, default
                                      * true */
    bool fused_qkv;                  /* q, k and v projected by one GEMM (Megatron's
                                      * linear_qkv); false: three linears, each its own
                                      * GEMM of its own width; optional, default true */
    bool fused_gate_up;              /* a gated MLP's gate and up projections as one GEMM
                                      * (Megatron's linear_fc1); false: two; optional,
                                      * default true */
    bool grouped_gemm;               /* the local experts in one grouped GEMM */
    bool fsdp_flat_collectives;      /* ZeRO-3 gathers / reduce-scatters one flat buffer per
                                      * layer, which NCCL spreads over every NIC of a node
                                      * the group fills (px_cost_fsdp.h) */
    int flash_attention_version;     /* FlashAttention generation of the fused attention
                                      * kernel: 4 (cuDNN's fused attention, built for each
                                      * GPU: native on Hopper and Blackwell), 3 (Hopper-native:
                                      * FlashAttention-3), 2 (flash-attn 2: the native rate on
                                      * Ampere, less on later GPUs, px_attn_eff.h), 1
                                      * (FlashAttention 1: half FA2's rate, Dao 2023) */
    px_attn_kernel attn_kernel;      /* a kernel that is no generation of FlashAttention
                                      * (the Triton port), in place of the version;
                                      * optional, PX_AK_FRAMEWORK = the version says */
    int attn_native_max_head_dim;    /* on a GPU of attention generation 4 (Blackwell), the
                                      * widest value head the generation-4 kernel trains;
                                      * wider heads run flash-attn 2 (px_attn_kernel_version);
                                      * optional, 0 = no limit */
    bool quantized_params;           /* low precision: linear weights kept quantised and
                                      * gathered quantised (px_parallel.quantized_params);
                                      * optional, default false */
    bool dropout_off;                /* its GPT blocks train at dropout 0: no masks kept,
                                      * no dropout passes; optional, default false */
    bool grad_accum_separate;        /* each micro-batch's low-precision weight gradients
                                      * are added into the main gradients by a kernel of
                                      * their own (no gradient-accumulation fusion in the
                                      * weight-gradient GEMM; px_grad_accum.h); optional,
                                      * default false */
    bool zero1_grad_allreduce;       /* ZeRO-1 reduces the gradients with a full all-reduce
                                      * (each replica then updates its shard and all-gathers
                                      * the weights), not a reduce-scatter; optional,
                                      * default false */
    bool pp_outermost;               /* ranks ordered tp, cp, ep, dp, pp (the DP group inside
                                      * a pipeline stage's block of ranks), not the plan's
                                      * default tp, cp, ep, pp, dp; optional, default false */
    bool fused_moe_permute;          /* MoE token permute / un-permute in one fused kernel
                                      * each (px_moe_permute_bytes); optional, default
                                      * false */
    bool moe_a2a_overlap;            /* the EP dispatch / combine of one micro-batch under
                                      * another's compute (px_moe_a2a_exposed_s); optional,
                                      * default false */
    bool grad_accum_cast_copy;       /* the separate accumulation first casts the gradient
                                      * into a temporary of the main gradient's dtype
                                      * (px_grad_accum_cast_bytes); optional, default false */
    bool pp_blocking_p2p;            /* the pipeline's sends and receives block one after
                                      * another at every schedule step (px_pipe_engine.h);
                                      * optional, default false */
    bool tied_grad_allreduce;        /* the tied embedding's gradient all-reduced between
                                      * the first and the last stage after the schedule
                                      * (px_pipe_engine.h); optional, default false */
    bool blocking_engine;            /* every collective and pipeline message runs blocking
                                      * between the kernels, on buffers allocated zeroed for
                                      * each use (the CPU executor): the pipeline is timed on
                                      * its phase timeline (px_pipe_sim.h), ZeRO-3's buffers
                                      * and copies are streamed
                                      * (px_blocking_zero3_stream_bytes); applies to plans
                                      * with dp_overlap off; optional, default false */
    bool cp_gather_qkv;              /* CP, whatever the flavour, all-gathers the whole
                                      * sequence's q|k|v rows before the attention (forward
                                      * and again in the backward) and reduce-scatters their
                                      * gradients, blocking (px_cost_cp_gather_qkv_time);
                                      * applies to plans with dp_overlap off; optional,
                                      * default false */
    bool zero_16bit_partitions;      /* ZeRO-2/3 keep the gradient partition in the 16-bit
                                      * dtype and copy it to fp32 only for the optimizer
                                      * step, ZeRO-3 keeps a 16-bit parameter shard beside
                                      * the fp32 master, and its gathered buffer holds the
                                      * largest module's 16-bit weights and gradient, not
                                      * prefetched layers (DeepSpeed; px_cost_4_memory.c);
                                      * optional, default false */
    bool fsdp_head_kept_gathered;    /* ZeRO-3 / FSDP: the final norm and the head are one
                                      * unit that is not resharded after its forward, so its
                                      * gathered weights are live at the loss's peak;
                                      * optional, default false */
    bool pp_buffers_per_micro;       /* the pipeline schedule allocates an activation and a
                                      * gradient receive buffer for every micro-batch of every
                                      * chunk and keeps them, and keeps each micro-batch's
                                      * stage output until its backward
                                      * (torch.distributed.pipelining); optional, default
                                      * false: one buffer each way in flight (Megatron) */
    bool cp_allgather_overlap;       /* the CP all-gather as PyTorch's context_parallel runs
                                      * it: K and V gathered once, waited for after the first
                                      * block, their fp32 gradients passed around the ring
                                      * step by step (px_cost_cp.h); optional, default false:
                                      * Megatron's all_gather, gradients reduce-scattered,
                                      * nothing overlapped */
    bool cp_kv_repeated;             /* K and V reach the attention repeated to the query's
                                      * head count (GQA by repeat_kv), so CP moves them so;
                                      * optional, default false */
    int fsdp_pp_grad_bytes;          /* ZeRO-3 / FSDP under a pipeline: the stage's layers stay
                                      * gathered and their gradients accumulate unsharded,
                                      * at this many bytes a parameter, from the first
                                      * micro-batch to the last (0: resharded each
                                      * micro-batch); optional, default 0 */
    bool act_offload_async;          /* activation offload: a layer's copy to the host runs
                                      * on a side stream under the next layer's forward
                                      * (false: the compute waits for it); optional,
                                      * default false */
    bool act_offload_prefetch;       /* activation offload: a layer's copy back is issued
                                      * under the backward of the layer after it (false:
                                      * when its own backward needs it); optional,
                                      * default false */
    bool sp_keeps_gathered_input;    /* sequence parallelism: the column-parallel linears keep
                                      * the all-gathered input (the whole sequence) for their
                                      * weight gradient, not the shard gathered again in the
                                      * backward (px_cost_act_layer); optional, default false */
    bool quant_keeps_hp_input;       /* low precision: each quantised linear saves its
                                      * activation-dtype input for the backward and quantises
                                      * it there again, one cast per GEMM operand (torchao's
                                      * Float8Linear and MXLinear), not the quantised copies
                                      * its forward wrote (Transformer Engine); optional,
                                      * default false */
    bool selective_op_policy;        /* selective recompute keeps the outputs of every other
                                      * matmul and of the attention kernel and reruns the
                                      * rest (torchtitan's op-level SAC), not Megatron's
                                      * attention-core recompute (px_cost_act_layer);
                                      * optional, default false */
    int loss_logit_bytes;            /* bytes per logit of the current micro-batch live at the
                                      * loss's peak when the cross-entropy is not fused; 0:
                                      * Megatron's rule, the compute-dtype logits and one
                                      * fp32 copy (4 + e); optional */
    int loss_parallel_logit_bytes;   /* the same where the loss runs on vocabulary shards
                                      * (tp > 1: PyTorch's loss_parallel, whose
                                      * cross-entropy backward holds more copies); 0: as
                                      * loss_logit_bytes; optional */
    int loss_chunks;                 /* the head and loss run on this many slices of the
                                      * micro-batch's tokens, each slice's backward at once
                                      * in the forward (torchtitan's ChunkedLossWrapper):
                                      * one slice's logits live, and the hidden states'
                                      * gradient kept instead; 0 or 1: the whole micro-batch
                                      * at once; optional */
    double allocator_cache_fraction; /* share of the caching allocator's reserved peak that
                                      * is cached, not allocated (fragmentation; 0 where the
                                      * framework runs with expandable segments or plans its
                                      * buffers); optional, default 0 */
    int64_t workspace_bytes;         /* library workspaces held through the step (cuBLAS,
                                      * cuBLASLt, Transformer Engine); optional, default 0 */
    int vocab_rows_multiple;         /* not read: set from capabilities.pads_vocab and
                                      * vocab_pad_multiple at load (0: no padding); the
                                      * embedding and head hold the padded rows */
    double step_overhead_s;          /* seconds a step spends outside the modelled kernels
                                      * and collectives (the host's data loading, logging,
                                      * synchronisation); fitted by `calibrate --from-runs`;
                                      * optional, default 0 */
    double microbatch_overhead_s;    /* the same for each micro-batch a stage runs (kernel
                                      * launches and the host's schedule loop); optional,
                                      * default 0 */
} px_fw_runtime;

typedef struct {
    char name[32];
    char description[256];
    char path[512];                  /* the file it was read from */
    char release[32];                /* the release applied ("" = none: as it runs today) */
    char release_asked[32];          /* the release asked for where the profile lists no
                                      * release of that name and the nearest documented
                                      * state was applied ("" otherwise) */
    px_caps caps;
    px_fw_runtime run;
    px_fitted fitted;                /* provenance of fitted runtime fields; n_runs 0: none */
} px_framework;

/* $PARALLAX_FRAMEWORK_DIR if set, else frameworks/ of the source tree. */
const char *px_framework_dir_default(void);

/* The precision a request for `requested` runs as under caps: a plain
 * "fp8" where the framework has no delayed scaling is its own per-tensor
 * recipe (capability fp8_runs_as); anything else as requested. */
px_precision px_caps_precision(const px_caps *caps, px_precision requested);

/* The CP flavour a plan under caps runs: `requested` where the request names
 * one (given), else the framework's own, the first of ring p2p, KV
 * all-gather and all-to-all it runs (Megatron-Core's --cp-comm-type
 * defaults to the ring; MaxText all-gathers keys and values; DeepSpeed runs
 * Ulysses' all-to-all); ring p2p where caps is NULL or runs none. */
px_cp_comm px_caps_cp_comm(const px_caps *caps, px_cp_comm requested, bool given);

/* Reads frameworks/<name>.json (dir NULL: the default), or the file when
 * name_or_path is a path.  Strict: unknown keys, wrong types, unknown names
 * in the lists and traits without a source are errors naming the file, the
 * field and the allowed values. */
px_status px_framework_load(const char *name_or_path, const char *dir, px_framework *out,
                            px_error *err);

/* The runtime fields `calibrate --from-runs` may fit (NULL-terminated), the
 * value of one, and the setter (false: not a fit field). */
extern const char *const px_framework_fit_fields[];
double px_framework_fit_value(const void *fw, const char *field);
bool px_framework_fit_set(px_framework *fw, const char *field, double value);

/* Resolves name_or_path to the profile file px_framework_load reads (into
 * path).  PX_ERR_NOT_FOUND as px_framework_load for an unknown name. */
px_status px_framework_path(const char *name_or_path, const char *dir, char *path,
                            int path_len, px_error *err);

/* The same with one of the profile's releases applied: the traits its
 * "releases" section says that release ran differently (schema:
 * docs/framework-schema.md, "Releases").  release NULL, "" or "none": the
 * framework as it runs today.  A year or NeMo container the profile does
 * not list is planned as the documented state nearest to it in time
 * (px_release.h; out->release_asked names it); any other unknown name is
 * PX_ERR_NOT_FOUND naming the allowed values. */
px_status px_framework_load_release(const char *name_or_path, const char *dir,
                                    const char *release, px_framework *out, px_error *err);


/* Whether caps allows configuration p of model m: px_plan_check under caps
 * (px_plan_check_cap).  On false, *why (if not NULL) names the px_caps field
 * it lacks ("schedules", "etp"...), or "the plan rules" when a rule broke
 * that no capability lifts. */
bool px_caps_allow(const px_caps *caps, const px_model *m, const px_parallel *p,
                   const char **why);

#endif
