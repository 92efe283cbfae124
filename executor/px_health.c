/* px_health.c — divergence checks of the training step: the loss and every
 * rank's gradients, NaN or infinite, stop the update (px_exec.h). */
#include <math.h>
#include <stdlib.h>

#include "px_exec_internal.h"
#include "px_watchdog.h"

void px_ex_inject_nan(px_exec *ex)
{
    float *host = malloc((size_t)(ex->n_grads > 0 ? ex->n_grads : 1) * sizeof *host);
    if (!host)
        return; /* the loss is still NaN: the step diverges either way */
    for (int64_t i = 0; i < ex->n_grads; i++)
        host[i] = NAN;
    ex->be->upload(ex->be, ex->grads, host, ex->n_grads * (int64_t)sizeof *host);
    free(host);
    ex->loss_sum = NAN;
}

/* Sum of squares of this rank's gradient buffer, in double; NaN or
 * infinity propagate.  Staged through a host buffer kept for the run. */
static px_status local_sumsq(px_exec *ex, double *out, px_error *err)
{
    if (!ex->host_grads) {
        ex->host_grads = malloc((size_t)(ex->n_grads > 0 ? ex->n_grads : 1) * sizeof(float));
        if (!ex->host_grads)
            return PX_FAIL(err, PX_ERR_NOMEM, "engine: out of memory (gradient check)");
    }
    ex->be->download(ex->be, ex->host_grads, ex->grads, ex->n_grads * (int64_t)sizeof(float));
    double sum = 0.0;
    for (int64_t i = 0; i < ex->n_grads; i++)
        sum += (double)ex->host_grads[i] * ex->host_grads[i];
    *out = sum;
    return PX_OK;
}

px_status px_ex_check_health(px_exec *ex, double loss, px_error *err)
{
    PX_TRY(ex->be->sync(ex->be, err));
    double sumsq = 0.0;
    PX_TRY(local_sumsq(ex, &sumsq, err));
    /* MPI_MAX may drop a NaN (it compares): carry "not finite" as flags. */
    double mine[3] = {isfinite(loss) ? 0.0 : 1.0, isfinite(sumsq) ? 0.0 : 1.0,
                      isfinite(sumsq) ? sumsq : 0.0};
    double all[3] = {0.0, 0.0, 0.0};
    px_watchdog_enter("MPI_Allreduce (loss and gradient check)");
    px_status st = px_mpi_check(MPI_Allreduce(mine, all, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
                                "MPI_Allreduce (gradient check)", err);
    px_watchdog_leave();
    PX_TRY(st);
    ex->grad_norm = all[1] != 0.0 ? NAN : sqrt(all[2]);
    ex->diverged = all[0] != 0.0 || all[1] != 0.0;
    return PX_OK;
}
