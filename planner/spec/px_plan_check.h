/* px_plan_check.h — the rules of a legal plan, in one place.
 *
 * A model and a parallel configuration are legal for a consumer (the search,
 * the CPU or CUDA executor, an exporter) when px_plan_check accepts them under
 * that consumer's capability set (px_caps.h).  The search, the cost model,
 * plan I/O and `execute` all call it; none restates a rule.
 *
 * The per-dimension rules are exported too, so that the search can prune its
 * enumeration dimension by dimension (tp before it picks cp, ...) and count a
 * rejection under its reason; px_plan_check runs every one of them. */
#ifndef PX_PLAN_CHECK_H
#define PX_PLAN_CHECK_H

#include <stdint.h>

#include "px_caps.h"
#include "px_error.h"
#include "px_model.h"
#include "px_plan.h"

/* The built-in capability sets. */
void px_caps_parallax(px_caps *c);      /* the planner's full search space */
void px_caps_cpu_executor(px_caps *c);  /* `execute --backend cpu` */
void px_caps_cuda_executor(px_caps *c); /* `execute --backend cuda` */
void px_caps_any(px_caps *c);           /* the union of them (plan I/O) */

/* The model features (px_model_feature bits) a model uses. */
unsigned px_model_features(const px_model *m);
/* "multi-head latent attention (attn mla)" ... for one feature bit. */
const char *px_model_feature_name(unsigned feature);

/* The vocabulary rows a consumer holds at tensor-parallel size tp: the
 * vocabulary itself, or (pads_vocab) the next multiple of
 * vocab_pad_multiple x tp.  Rows past m->vocab are never a target nor looked
 * up, and take no part in the loss. */
int64_t px_caps_vocab_rows(const px_caps *c, int64_t vocab, int tp);

/* The whole check: sizes, every divisibility rule, the pipeline split, the
 * schedule, what the consumer runs, and last the model features (so that a
 * refusal by feature means every other rule holds).  The message names
 * the field, its value and what is allowed; features and schedules a
 * consumer lacks are PX_ERR_UNSUPPORTED, broken rules PX_ERR_INVALID.  On a
 * refusal by capability err->cap names the px_caps field the consumer lacks
 * (NULL when a rule broke that no capability lifts); the per-dimension rules
 * below fill it the same way.  No state is kept between calls. */
px_status px_plan_check(const px_model *m, const px_parallel *par, const px_caps *caps,
                        px_error *err);

/* px_plan_check, and on a refusal by capability the px_caps field the
 * consumer lacks ("schedules", "etp", "uneven_stages"...) in *cap (NULL on
 * success or when a rule broke that no capability lifts): err->cap, also
 * when the caller passes no err. */
px_status px_plan_check_cap(const px_model *m, const px_parallel *par, const px_caps *caps,
                            const char **cap, px_error *err);

/* The model features: ones the consumer runs, and experts in GPT blocks only
 * where it runs them. */
px_status px_rule_features(const px_model *m, const px_caps *caps, px_error *err);

/* ---- the rules, dimension by dimension (px_plan_check runs them all) ---- */

/* The sequence length a configuration trains: par->seq_len, else the model's. */
int64_t px_plan_seq_len(const px_model *m, const px_parallel *par);

/* tp divides the attention heads, the kv heads, the dense ffn and (unless the
 * consumer pads it) the vocabulary. */
px_status px_rule_tp(const px_model *m, int tp, const px_caps *caps, px_error *err);
/* cp divides the sequence into 2·cp chunks (each rank holds the i-th and the
 * (2cp-1-i)-th, which balances causal attention); a consumer without CP runs
 * cp = 1 only. */
px_status px_rule_cp(int64_t seq, int cp, const px_caps *caps, px_error *err);

/* Context parallelism of a hybrid model's Mamba-2 layers (Megatron-Core's
 * mamba_context_parallel.py): cp divides the heads of a tensor-parallel
 * rank, and its groups divide cp or cp them. */
px_status px_rule_mamba_cp(const px_model *m, int tp, int cp, px_error *err);
/* Sequence parallelism splits each rank's s/cp positions over tp; a MoE layer
 * routes a tp-th of a micro-batch's tokens on each TP rank. */
px_status px_rule_sp(const px_model *m, int64_t seq, int tp, int cp, bool sp,
                     int64_t micro_batch, const px_caps *caps, px_error *err);
/* Experts: ep divides them, ep·etp the tp·cp·dp GPUs of a stage, etp the
 * expert ffn; a dense model runs ep = etp = 1. */
px_status px_rule_experts(const px_model *m, int tp, int cp, int dp, int ep, int etp,
                          const px_caps *caps, px_error *err);
/* The fold alone (no model): ep·etp divides the tp·cp·dp GPUs of a stage. */
px_status px_rule_expert_fold(int tp, int cp, int dp, int ep, int etp, px_error *err);
/* The schedule: one the consumer runs; vpp > 1 only with pp >= 2 and an
 * interleaved schedule (or zb-h1 where the consumer runs it over chunks). */
px_status px_rule_schedule(int pp, int vpp, px_schedule schedule, const px_caps *caps,
                           px_error *err);
/* Pipeline: px_rule_schedule, and pp·vpp chunks, each with a layer. */
px_status px_rule_pipeline(const px_model *m, int pp, int vpp, px_schedule schedule,
                           const px_caps *caps, px_error *err);
/* px_rule_pipeline for a fixed interleaved layout that the search splits as
 * Megatron-Core does with the embedding and the loss counted as pipeline
 * layers (px_split_megatron.h): where caps runs empty end chunks, pp·vpp may
 * exceed the layers by those two chunks (the 30-layer proxy of Llama 3.1
 * 405B on pp 4 x vpp 8). */
px_status px_rule_pipeline_end_slots(const px_model *m, int pp, int vpp, px_schedule schedule,
                                     const px_caps *caps, px_error *err);
/* The EP all-to-all under another micro-batch's compute, as Megatron-Core
 * runs it (transformer_config.py's checks of overlap_moe_expert_parallel_comm):
 * a consumer that runs it (caps), experts split over ep > 1 ranks, virtual
 * pipeline chunks wherever pp > 1 (its schedule interleaves one micro-batch's
 * forward with another's backward chunk by chunk), no full recompute of any
 * layer (any_full: a per-layer table's) and at most one multi-token-prediction
 * module. */
px_status px_rule_moe_a2a_overlap(const px_model *m, int ep, int pp, int vpp, bool any_full,
                                  const px_caps *caps, px_error *err);
/* Selective recompute by module (Megatron-Core's --recompute-modules,
 * transformer_config.py's checks): the default (the attention core)
 * anywhere; another non-empty set where the consumer runs it (caps), some
 * layer recomputes selectively (any_selective), each module is one of the
 * model's (moe_act, moe: experts; shared_experts: shared ones; mla_up_proj:
 * MLA; mlp: a dense MLP layer), and moe_act and layernorm not under
 * delayed-scaling FP8, nor other quantised GEMMs unless the consumer runs
 * them so (caps). */
px_status px_rule_recompute_modules(const px_model *m, unsigned set, bool any_selective,
                                    px_precision precision, const px_caps *caps, px_error *err);
/* The routed tokens' dispatcher: all-to-all anywhere; DeepEP or HybridEP
 * (Megatron-Core's flex dispatcher) where the consumer runs it (caps), on a
 * model with experts, over more than one expert rank (ep x etp > 1: its
 * buffers need peers, token_dispatcher.py). */
px_status px_rule_moe_dispatcher(const px_model *m, px_moe_dispatch d, int ep, int etp,
                                 const px_caps *caps, px_error *err);
/* Micro-batches: b, m >= 1; interleaving needs m a multiple of pp. */
px_status px_rule_batch(int pp, int vpp, px_schedule schedule, int64_t micro_batch,
                        int64_t n_micro, px_error *err);

#endif
