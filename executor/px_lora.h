/* px_lora.h — LoRA fine-tuning in the engine (Hu et al. 2021): every
 * targeted linear W [out, in] of a layer gets adapters A [r, in] and
 * B [out, r], its output becomes W x + (alpha / r) B (A x), and only the
 * adapters train.  The base model lives in a frozen table of its own (no
 * gradients, no optimizer state); the trained table holds the adapters, so
 * data parallelism, ZeRO 1-3, the optimizer and checkpoints cover them only.
 *
 * Tensor parallelism (Megatron-Bridge's ParallelLinearAdapter, as arithmetic):
 * on a column-parallel W (qkv, fc1) A is replicated and B split by W's output
 * rows; each rank's gradient of A is partial (it sees its rows of B only) and
 * is summed over TP.  On a row-parallel W (proj, fc2) A is split by W's input
 * columns, the partial A x is all-reduced over TP ([T, r]) and B, replicated,
 * adds its output once, after the base output's reduction (on this rank's
 * sequence shard under SP, whose B gradient is then summed over TP like the
 * norms'). */
#ifndef PX_LORA_H
#define PX_LORA_H

#include "px_exec_internal.h"

/* Target indices: the bit positions of PX_LORA_QKV .. PX_LORA_FC2. */
enum { PX_LORA_T_QKV = 0, PX_LORA_T_PROJ, PX_LORA_T_FC1, PX_LORA_T_FC2 };

/* The rank's frozen base table (px_params_build) and its trained table: the
 * adapters of its layers, with chunks and layers whose base offsets carry
 * PX_OFF_FROZEN. */
px_status px_lora_tables(px_param_table *train, px_param_table *frozen, const px_model *m,
                         const px_parallel *par, int tp_rank, int stage, px_error *err);

/* The frozen weights (initial values, compute dtype), the scale matrix and
 * the norms' gradient sink. */
px_status px_lora_setup(px_exec *ex, px_error *err);

/* The frozen weights as fp32 into host[ex->ftab.n_elems]. */
px_status px_lora_frozen_to_host(px_exec *ex, float *host, px_error *err);

/* A table offset inside the layer's adapters (its ZeRO-2/3 unit), -1 when
 * the layer has none. */
int64_t px_lora_unit_off(const px_layer_params *lp);

/* Column-parallel target t (qkv, fc1): g [T, h] the linear's input (gathered
 * under SP), y [T, out_l] its output, to which the adapters' output is
 * added; keeps a->lora_u[t] [T, r].  No-op without an adapter on t. */
px_status px_lora_col_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, int t,
                          const void *g, void *y, px_error *err);
/* Row-parallel target t (proj, fc2): x [T, in_l] this rank's input columns,
 * y_s [Ts, h] the base output after its TP reduction. */
px_status px_lora_row_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, int t,
                          const void *x, void *y_s, px_error *err);

/* Backward of a column target: dy [T, out_l] the gradient at the linear's
 * output; adds the adapters' input gradient (partial over TP, like the base
 * linear's) to dx [T, h] unless dx is NULL; with wgrad, accumulates the
 * gradients of A (needs g [T, h], the input) and B. */
px_status px_lora_col_bwd(px_exec *ex, const px_layer_params *lp, const px_layer_act *a, int t,
                          const void *dy, const void *g, void *dx, bool wgrad, px_error *err);
/* Backward of a row target: dy_s [Ts, h] the gradient at the block output
 * (this rank's shard under SP), dy [T, h] the same gathered (dy_s without
 * SP); x [T, in_l] the input; dx [T, in_l] gets the input gradient added
 * unless NULL; wgrad as above. */
px_status px_lora_row_bwd(px_exec *ex, const px_layer_params *lp, const px_layer_act *a, int t,
                          const void *dy_s, const void *dy, const void *x, void *dx, bool wgrad,
                          px_error *err);

#endif
