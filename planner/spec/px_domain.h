/* px_domain.h — the fast (NVLink) domain one job's ranks see.
 *
 * A profile's gpus_per_node is the hardware's NVLink domain.  Where that
 * domain spans several hosts (GB200 / GB300 NVL72: 18 trays of 4 GPUs on one
 * NVLink switch fabric, gpus_per_host 4) a job larger than one rack is not
 * laid out rack by rack: the scheduler places it in segments of whole trays
 * that each stay inside one rack (Slurm's topology/block plugin, `sbatch
 * --segment`), and NeMo's launcher asks for the largest segment of at most
 * one rack's trays that divides the job's tray count (NVIDIA/NeMo
 * scripts/performance/executors.py, slurm_executor).  128 GPUs = 32 trays
 * run as two segments of 16 trays: 64 GPUs on NVLink each, not 72 and 56.
 * docs/cost-model.md, "Communication". */
#ifndef PX_DOMAIN_H
#define PX_DOMAIN_H

#include "px_hw.h"

/* GPUs that share the fast domain for a job of `gpus` GPUs, laid out from
 * rank 0 in blocks of that size: gpus_per_node, or the segment of whole
 * hosts described above when the domain spans hosts and the job spans
 * domains.  Always >= 1. */
int px_domain_job_gpus(const px_hw *hw, int gpus);

#endif
