/* px_runlog.h — a training log as a row of the published-runs schema
 * (shared/data/README.md), for `calibrate --from-log`.
 *
 * Megatron-LM / NeMo: the arguments block Megatron prints at start-up
 * (megatron/training/arguments.py, _print_args: a "---- arguments ----" line,
 * then "  name ....... value" lines, then "---- end of arguments ----") for the
 * model, the layout and the batch, and its iteration lines
 * (megatron/training/training.py, training_log: "... | elapsed time per
 * iteration (ms): X | ...") for the step time.
 *
 * torchtitan: its TOML job config (in a file given alongside, or echoed in the
 * log as "[section]" and "key = value" lines) for the layout and the batch,
 * the model arguments line its model builder logs ("...ModelArgs(dim=...,
 * n_layers=..., ...)") for the model, the device mesh line ("Building N-D
 * device mesh with [...], [...]") for the GPU count when data_parallel_shard_degree
 * is -1, and its per-step metrics lines (torchtitan/components/metrics.py:
 * "step: N  loss: ...  tps: T  tflops: F  mfu: M%") for tokens/s per GPU.
 *
 * The first measured step is left out (it includes compilation and warm-up
 * when there are others); the row's measurement is the median of the rest. */
#ifndef PX_RUNLOG_H
#define PX_RUNLOG_H

#include <jansson.h>

#include "px_error.h"

typedef struct {
    const char *gpu;      /* hardware.gpu ("H100", ...); NULL: from the log (torchtitan's
                           * device line), else gpu_default, else an error */
    const char *gpu_default;
    int gpus_per_node;    /* 0: not published (null) */
} px_runlog_opts;

/* Reads log_path (config_path: torchtitan's TOML, NULL when echoed in the
 * log or for Megatron) into *row (a new reference).  A log that is neither
 * format, lacks iteration lines or a needed argument is PX_ERR_INVALID
 * naming the file and the argument. */
px_status px_runlog_row(const char *log_path, const char *config_path, const px_runlog_opts *o,
                        json_t **row, px_error *err);

#endif
