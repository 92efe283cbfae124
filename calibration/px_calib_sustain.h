/* px_calib_sustain.h — the fraction of the calibrated compute rates a rank
 * sustains through a training step (px_hw.sustained_frac).
 *
 * Why: every other calibration step keeps its fastest batch (an interruption
 * by another process only ever slows a call down), which is the right
 * estimate of what a kernel can do but not of what a step of several
 * seconds gets: there the rank runs through every interruption, on a core it
 * may share, with operands that come from memory rather than a cache the
 * repeated call kept warm.  The executor's own trace shows the gap: its
 * GEMMs' fastest calls match the calibrated rates, their mean does not.
 *
 * How: every rank at once (the executor's ranks compute together) runs a
 * stream of GEMMs of one mid-size shape for a fixed window, each call on the
 * next of several operand sets that together exceed the last-level cache,
 * and compares the stream's mean rate with the best single call of the same
 * shape on the same operands.  The ratio (at most 1) is what the cost model
 * divides every compute time by.  It is a property of this machine in its
 * present state: a calibration taken on a quiet machine gives ~1, one taken
 * under load describes that load — hence "calibrate in the same run". */
#ifndef PX_CALIB_SUSTAIN_H
#define PX_CALIB_SUSTAIN_H

#include "px_calib.h"
#include "px_error.h"

/* Window of the GEMM stream, seconds (quick: 1 s, else 4 s); the
 * synchronised stream takes half of it. */
double px_calib_sustain_window_s(bool quick);

/* Measures the fraction into *frac (in (0, 1]) and, when o->sync is set
 * (MPI), the mean wait at a synchronisation after a GEMM of that stream
 * beyond the synchronisation's own cost into *sync_wait_s (else 0): what
 * each blocking collective of a step costs on top of its transfer when the
 * ranks do not progress in lock step (px_hw.sync_wait_s), and the mean
 * compute between two synchronisations then (*sync_interval_s). */
px_status px_calib_sustain_run(const px_calib_opts *o, double *frac, double *sync_wait_s,
                               double *sync_interval_s, px_error *err);

#endif
