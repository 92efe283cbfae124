/* px_job_domain.h — the fast (NVLink) domain a job of G GPUs sees when the
 * profile's domain spans several hosts (GB200 / GB300 NVL72: 18 trays of 4
 * GPUs).  Formula and source: docs/cost-model.md, "Multi-host NVLink
 * domains". */
#ifndef PX_JOB_DOMAIN_H
#define PX_JOB_DOMAIN_H

#include <stdint.h>

#include "px_hw.h"

/* GPUs of one fast domain as a job of `gpus` GPUs is placed on it.  A job
 * larger than one domain is placed in equal segments of whole hosts (Slurm's
 * --segment, which NeMo's launcher sets on multi-rack GB200 jobs): the
 * largest divisor of the job's host count that fits in one domain, so no
 * segment straddles two racks and the job's groups see segment x
 * gpus_per_host GPUs on NVLink.  A job within one domain, or a profile whose
 * node is one host (gpus_per_host 0), keeps gpus_per_node. */
int px_job_domain_gpus(const px_hw *hw, int64_t gpus);

#endif
