/* px_hw.h — a hardware profile: one accelerator and the network between them.
 * Loaded from hw_profiles/<name>.json (schema: docs/hw-schema.md) or written by
 * `calibrate`.  Units are in the field names: _flops (FLOP/s), _bytes, _bw
 * (bytes/s), _lat_s (seconds). */
#ifndef PX_HW_H
#define PX_HW_H

#include <stdbool.h>
#include <stdint.h>

#include "px_error.h"
#include "px_fitted.h"

/* One measured (or datasheet) GEMM throughput point: C[m,n] = A[m,k] B[k,n]. */
typedef struct {
    int64_t m, n, k;
    double flops; /* achieved FLOP/s */
} px_gemm_point;

#define PX_HW_MAX_GEMM_POINTS 128
#define PX_HW_MAX_COLL_POINTS 64

/* Measured collective cost for a group size: time = lat_s + bytes / bw,
 * for messages of at least min_bytes (0: every size).  A group size may
 * have several points, one per size range (docs/calibration.md). */
typedef struct {
    int n_ranks;
    double lat_s;
    double bw; /* algorithm bandwidth in bytes/s of the message size */
    int64_t min_bytes;
} px_coll_point;

typedef struct {
    char name[64];
    char description[256];

    /* Compute */
    double peak_flops;        /* dense bf16 (or the executor's dtype) per device */
    int64_t hbm_bytes;        /* device memory */
    double hbm_bw;            /* device memory bandwidth, bytes/s */
    int64_t mem_reserve_bytes;/* kept free on top of what the runtime takes (the user's
                               * headroom); optional, default 0 */
    double hbm_visible_ratio; /* device memory CUDA reports (cudaMemGetInfo's total) per
                               * byte of hbm_bytes: a marketed "80 GB" is 80 GiB of HBM
                               * less what the driver keeps (79.11 GiB on an H100);
                               * optional, default 1 */
    int64_t runtime_context_bytes; /* the device runtime's own memory: the CUDA context
                               * and the kernel modules a training step loads; optional,
                               * default 0 */
    int64_t nccl_comm_bytes;  /* device buffers of one NCCL communicator (NCCL_BUFFSIZE and
                               * the LL / LL128 buffers, per channel and peer); optional,
                               * default 0 */
    int dtype_bytes;          /* bytes of the compute dtype of weights and activations:
                               * 2 (bf16 mixed precision, GPUs/TPUs; fp32 master copy
                               * kept by the optimizer) or 4 (fp32, the CPU backend: the
                               * weights are the master copy, grads fp32) */

    /* GEMM efficiency by shape.  With gemm points, the cost model interpolates
     * them; otherwise the default shape model of docs/cost-model.md applies
     * with these parameters. */
    double gemm_eff_max;      /* best achievable fraction of peak on large GEMMs */
    double gemm_eff_half_dim; /* dimension at which efficiency halves (elements) */
    int n_gemm_points;
    px_gemm_point gemm_points[PX_HW_MAX_GEMM_POINTS];
    double mem_bound_eff;     /* achieved fraction of hbm_bw for element-wise ops */
    double comm_overlap_cost; /* fraction of a collective's duration charged as compute
                               * while it hides under computation: NCCL/MPI run it on
                               * SMs (cores) the GEMMs then lack; 0 where DMA engines
                               * move the data (TPU ICI) */
    double sustained_frac;    /* fraction of the calibrated (best-of) compute rates a
                               * rank sustains through a training step: its share of
                               * the core and the cold caches a long run sees, the
                               * mean over a GEMM stream against its best call;
                               * written by `calibrate` on CPUs (px_calib_sustain.h),
                               * optional: 0 = 1 (datasheet rates are sustained) */
    double sync_wait_s;       /* mean wait of a rank at a blocking collective for the
                               * peer an interruption held back, beyond the transfer:
                               * written by `calibrate --mpi` on CPUs, optional (0) */
    double sync_interval_s;   /* the compute between two of those synchronisations
                               * when sync_wait_s was measured: a shorter interval
                               * is interrupted proportionally less (px_blocking.h) */
    double attn_eff;          /* fraction of peak_flops the attention core runs at,
                               * forward + backward together, counting the causal
                               * FLOPs (half the s x s product) 1x forward and 2.5x
                               * backward as the cost model does; written by
                               * `calibrate` (the executor's own kernel), optional:
                               * 0 = the cost model's FlashAttention default */
    int attn_native_version;  /* FlashAttention generation written for this GPU's
                               * tensor cores (2: Ampere's mma.sync; 3: Hopper's
                               * wgmma and TMA, and later parts); a framework's
                               * older kernel runs slower (px_attn_eff.h);
                               * optional: 0 = every generation is native */
    double exp_rate;          /* exponentials per second of the special-function
                               * units (the softmax's exp in an attention kernel);
                               * optional: 0 = not modelled (no head-width term) */
    /* Element-wise operator classes as `calibrate` measures the executor's
     * own kernels (on a CPU they differ 100x: a residual add streams, a GeLU
     * computes a tanh per element).  Each is bytes/s in the cost model's byte
     * accounting: the forward's reads + writes charged 3x for forward +
     * backward (xent, adamw and embed: their whole fwd+bwd / update bytes as
     * px_cost_5_layer.c counts them).  Optional: 0 = hbm_bw x mem_bound_eff. */
    double norm_bw;           /* RMSNorm / LayerNorm */
    double residual_bw;       /* residual and bias adds */
    double gelu_bw;           /* GeLU (tanh approximation) */
    double swiglu_bw;         /* SwiGLU */
    double rope_bw;           /* rotary embedding of q and k */
    double xent_bw;           /* vocabulary-parallel cross-entropy over the logits */
    double adamw_bw;          /* the optimizer step */
    double embed_bw;          /* embedding gather + scatter-add */

    /* Topology: devices 0..gpus_per_node-1 share the fast domain. */
    int gpus_per_node;
    bool torus;               /* no node cliff (TPU): every group uses intra_* */
    double intra_bw;          /* per device, one direction, bytes/s (NVLink) */
    double intra_lat_s;
    double inter_bw;          /* per device, one direction, bytes/s (IB) */
    double inter_lat_s;
    double intra_bw_eff;      /* share of intra_bw NCCL's collectives reach (its protocol
                               * overhead); optional, default 1 */
    double inter_bw_eff;      /* the same for inter_bw; optional, default 1 */
    int n_coll_points;        /* calibrated collectives (CPU/MPI profiles) */
    px_coll_point allreduce_points[PX_HW_MAX_COLL_POINTS];
    /* The other calibrated collectives (written by `calibrate --mpi`; counts 0
     * on datasheet profiles, which then cost them from intra/inter bw + lat).
     * Same time = lat_s + bytes / bw convention, bytes being the full buffer
     * as nccl-tests counts it: the gathered output of an all-gather, the
     * unreduced input of a reduce-scatter, one rank's send buffer of an
     * all-to-all. */
    int n_allgather_points;
    px_coll_point allgather_points[PX_HW_MAX_COLL_POINTS];
    int n_reduce_scatter_points;
    px_coll_point reduce_scatter_points[PX_HW_MAX_COLL_POINTS];
    int n_alltoall_points;
    px_coll_point alltoall_points[PX_HW_MAX_COLL_POINTS];

    /* Reliability and checkpoints (goodput) */
    double gpu_mtbf_hours;    /* mean time between failures of one device */
    double ckpt_write_bw;     /* storage bandwidth per device for sharded checkpoints */
    double restart_s;         /* time to restart a job after a failure */

    /* Cost of a run (px_run_cost.h); 0 = unknown, printed "n/a" */
    double power_w;           /* board power of one device at full load, watts */
    double price_per_gpu_hour;/* default rental price of one device-hour, US dollars */
    /* Dense tensor-core peaks of the low-precision formats, FLOP/s per
     * device (datasheet, without sparsity); 0: the device has no such
     * tensor-core path and a plan in that precision is refused
     * (px_cost_precision.h).  fp8: E4M3/E5M2 with per-tensor or per-row
     * scales applied outside the MMA; mxfp8: FP8 with 32-element E8M0 block
     * scales applied by the tensor cores (Blackwell); fp4: FP4 (E2M1) with
     * hardware block scales (NVFP4, MXFP4). */
    double fp8_flops;
    double mxfp8_flops;
    double fp4_flops;
    /* The half-precision tensor-core path is fp16 only, with no bf16 (V100):
     * peak_flops is the fp16 peak and a bf16 plan is refused. */
    bool fp16_only;
    /* The host beside each device, for optimizer offload (px_offload.h).
     * Optional, 0 = unknown (a plan that offloads is then refused). */
    double host_link_bw;      /* device <-> host memory, one direction, bytes/s per
                               * device (PCIe x16, NVLink-C2C) */
    int64_t host_mem_bytes;   /* host memory per device: the node's DRAM / devices */
    double host_mem_bw;       /* host DRAM bandwidth per device, bytes/s: what bounds
                               * the host's Adam step (it streams the state) */
    /* GPUs in one host (a compute tray), when the fast domain spans several
     * (GB200 / GB300 NVL72: 4 a tray, 72 on NVLink); 0: gpus_per_node */
    int gpus_per_host;
    /* Multipliers on the GEMM and the attention kernels' rates, fitted to a
     * cluster's own measured runs (`calibrate --from-runs`, docs/calibration.md):
     * what that stack achieves against this profile's model.  Optional, 0 = 1;
     * written only when set. */
    double gemm_eff_scale;
    double attn_eff_scale;
    px_fitted fitted;         /* provenance of the fitted fields; n_runs 0: none */
} px_hw;

/* Loads a profile by name (hw_profiles/<name>.json) or path. */
px_status px_hw_load(const char *name_or_path, const char *profiles_dir, px_hw *out,
                     px_error *err);

/* Writes a profile in the schema px_hw_load reads. */
px_status px_hw_save(const px_hw *hw, const char *path, px_error *err);

void px_hw_list_profiles(const char *profiles_dir, char *buf, int buf_len);

/* x against the bounds of the profile field key (one table for the file and
 * the command-line option that overrides it); what names the option. */
px_status px_hw_check_field(const char *what, const char *key, double x, px_error *err);

px_status px_hw_validate(const px_hw *hw, px_error *err);

const char *px_hw_profiles_dir_default(void);

/* The fields `calibrate --from-runs` may fit, NULL-terminated, and the value
 * the cost model uses for one of them (a scale left 0 is 1). */
extern const char *const px_hw_fit_fields[];
double px_hw_fit_value(const void *hw, const char *field);
/* Sets a fit field's value (false: not a fit field). */
bool px_hw_fit_set(px_hw *hw, const char *field, double value);

/* Defaults of the optional profile fields (docs/hw-schema.md says why each). */
#define PX_HW_DEFAULT_MEM_RESERVE_BYTES INT64_C(0) /* the runtime's share is its own fields */
#define PX_HW_DEFAULT_GEMM_EFF_MAX 0.80       /* large bf16 GEMMs reach ~80% of datasheet peak */
#define PX_HW_DEFAULT_GEMM_EFF_HALF_DIM 128.0 /* smallest GEMM dim where efficiency halves */
#define PX_HW_DEFAULT_MEM_BOUND_EFF 0.75      /* element-wise kernels vs datasheet HBM bw */
#define PX_HW_DEFAULT_BW_EFF 1.0              /* a profile without a figure: the line rate */
#define PX_HW_DEFAULT_COMM_OVERLAP_COST 0.15  /* ~16 NCCL channels of one SM each beside
                                               * the GEMMs on 108-132-SM GPUs */
#define PX_HW_DEFAULT_GPU_MTBF_HOURS 50677.0  /* Llama 3: 419 interruptions, 16384 GPUs, 54 days */
#define PX_HW_DEFAULT_CKPT_WRITE_BW 1.0e9     /* bytes/s per device to checkpoint storage */
#define PX_HW_DEFAULT_RESTART_S 600.0         /* reschedule, reload checkpoint, re-init NCCL */

/* Sets every optional field to its default and the rest to 0. */
void px_hw_init(px_hw *hw);

/* The default profile's name: the lecture's H100 cluster. */
#define PX_HW_DEFAULT "h100-sxm"

/* The memory a plan may fill on one device: what CUDA reports
 * (hbm_bytes x hbm_visible_ratio) less the user's mem_reserve_bytes; the
 * runtime's own share is in the plan's memory (px_cost_runtime.h). */
int64_t px_hw_usable_bytes(const px_hw *hw);

#endif
