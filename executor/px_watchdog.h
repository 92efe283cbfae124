/* px_watchdog.h — bounds every blocking communication of `execute` by a
 * timeout, so a rank that stops (SIGSTOP, a hung device, a lost node) ends
 * the whole job instead of hanging it forever.
 *
 * Why a thread: a rank blocked inside MPI or waiting on NCCL cannot check a
 * clock itself.  The main thread marks each blocking operation (enter /
 * leave, nested); a watchdog thread wakes a few times a second and, when
 * the innermost operation has lasted longer than the timeout, prints which
 * rank waited in which operation at which step, runs the registered abort
 * hook (the CUDA backend's ncclCommAbort) and ends the process with exit
 * status 3.  mpirun then ends every other rank (a rank that exits without
 * MPI_Finalize aborts the job).  The stopped rank is the one that printed
 * no such line.
 *
 * One watchdog per process (the state is process-wide, as the process's
 * MPI job is); enter/leave are for the thread that does the communication. */
#ifndef PX_WATCHDOG_H
#define PX_WATCHDOG_H

#include <stdint.h>

#include "px_backend.h"
#include "px_error.h"

/* The default of `execute --timeout`: ten minutes, longer than any one
 * collective of a healthy training step (Megatron's and PyTorch's
 * distributed timeouts default to 10 and 30 minutes). */
#define PX_WATCHDOG_DEFAULT_TIMEOUT_S 600.0

/* Starts the thread; rank names this process in messages, world (the job's
 * ranks) says whether another rank can be the one that holds it up. */
px_status px_watchdog_start(double timeout_s, int rank, int world, px_error *err);
/* Stops and joins the thread (no-op when not started). */
void px_watchdog_stop(void);

/* Marks the start and the end of a blocking operation (op: a static string
 * such as "MPI_Barrier (step start)"). */
void px_watchdog_enter(const char *op);
void px_watchdog_leave(void);
/* The training step being run, for the message (-1: none). */
void px_watchdog_set_step(int64_t step);

/* Called by the watchdog thread before it ends the process (e.g. to abort
 * NCCL communicators); must not block on other ranks. */
void px_watchdog_set_abort_hook(void (*hook)(void *), void *arg);

/* Wraps be's collectives, point-to-point batches and sync with enter/leave
 * (the operation named with its group size). */
void px_watchdog_wrap_backend(px_backend *be);

#endif
