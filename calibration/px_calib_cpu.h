/* px_calib_cpu.h — measures the CPU this process runs on into a hardware
 * profile: BLAS GEMMs by shape, memory bandwidth, the executor's kernels,
 * the sustained share of those rates, MPI (with use_mpi), memory capacity
 * (docs/calibration.md). */
#ifndef PX_CALIB_CPU_H
#define PX_CALIB_CPU_H

#include <stdbool.h>

#include <mpi.h>

#include "px_calib.h"
#include "px_error.h"
#include "px_hw.h"

/* Fills every field of hw but the description, name and checkpoint
 * bandwidth.  Collective over world when use_mpi (size: its ranks), whose
 * ranks measure at once and keep the mean rates. */
px_status px_calib_cpu(const px_calib_opts *o, MPI_Comm world, bool use_mpi, int size, px_hw *hw,
                       px_error *err);

#endif
