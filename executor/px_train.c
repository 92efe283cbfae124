/* px_train.c — the timed training run `execute` drives (px_train.h). */
#include "px_train.h"

#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "px_ckpt.h"
#include "px_cpu_clock.h"
#include "px_memtrack.h"
#include "px_watchdog.h"

px_status px_train_run_init(const px_train *t, px_run *run, px_error *err)
{
    int64_t total = t->end - t->start;
    memset(run, 0, sizeof *run);
    run->steps = total - t->warmup;
    run->warmup = t->warmup;
    run->first_step = t->start;
    run->diverged_step = -1;
    run->world = t->world;
    run->backend = t->be->name;
    run->dtype = px_dtype_name(px_exec_dtype(t->ex));
    bool device_clock = t->be->timer_start && t->be->timer_stop;
    if (device_clock)
        run->device_time_s = calloc((size_t)total, sizeof *run->device_time_s);
    run->losses = calloc((size_t)total, sizeof *run->losses);
    run->grad_norms = calloc((size_t)total, sizeof *run->grad_norms);
    if (t->plan->model.n_mtp_modules > 0 &&
        !(run->mtp_losses = calloc((size_t)total, sizeof *run->mtp_losses)))
        return px_error_set(err, PX_ERR_NOMEM, NULL, 0, 0, "out of memory");
    run->step_time_s = calloc((size_t)total, sizeof *run->step_time_s);
    run->cpu_time_s = calloc((size_t)total, sizeof *run->cpu_time_s);
    run->peak_memory_bytes = calloc((size_t)t->world, sizeof *run->peak_memory_bytes);
    run->peak_breakdown = calloc((size_t)t->world, sizeof *run->peak_breakdown);
    run->host_bytes = calloc((size_t)t->world, sizeof *run->host_bytes);
    if (!run->host_bytes || !run->losses || !run->grad_norms || !run->step_time_s || !run->cpu_time_s ||
        !run->peak_memory_bytes || !run->peak_breakdown || (device_clock && !run->device_time_s))
        return px_error_set(err, PX_ERR_NOMEM, NULL, 0, 0, "out of memory");
    return PX_OK;
}

/* One step i (this run's j-th): barrier, the step under the watchdog, its
 * time and peak memory reduced to rank 0. */
static px_status one_step(const px_train *t, int64_t i, px_run *run, px_error *err)
{
    px_backend *be = t->be;
    bool device_clock = be->timer_start && be->timer_stop;
    int64_t j = i - t->start;
    px_watchdog_enter("MPI_Barrier (step start)");
    if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS)
        return px_error_set(err, PX_ERR_MPI, NULL, 0, 0, "MPI_Barrier failed");
    px_watchdog_leave();
    double t0 = MPI_Wtime(), cpu0 = px_thread_cpu_s(), loss = 0.0;
    if (t->trace && i == 0)
        px_trace_start(t->trace); /* the common origin: right after a barrier */
    if (t->trace)
        px_trace_step_begin(t->trace, i, i >= t->trace_warmup);
    if (t->rank == t->fail_rank && i == t->fail_step)
        return px_error_set(err, PX_ERR_INTERNAL, NULL, 0, 0,
                            "injected failure at step %lld (PX_EXECUTE_INJECT_FAILURE)",
                            (long long)i);
    px_watchdog_enter("training step (computing, or the loss and gradient-check "
                      "all-reduce)");
    if (device_clock)
        PX_TRY(be->timer_start(be, err));
    PX_TRY(px_exec_step(t->ex, i, true, &loss, err));
    if (t->trace)
        px_trace_step_end(t->trace);
    double dev = 0.0, dev_max = 0.0;
    if (device_clock)
        PX_TRY(be->timer_stop(be, &dev, err));
    px_watchdog_leave();
    double dt = MPI_Wtime() - t0, dt_max = dt;
    double cpu = px_thread_cpu_s() - cpu0, cpu_max = cpu;
    int64_t peak = px_exec_memory(t->ex)->peak_bytes, peak_max = peak;
    px_watchdog_enter("MPI_Reduce (step time and memory)");
    if (MPI_Reduce(&dt, &dt_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD) ||
        MPI_Reduce(&peak, &peak_max, 1, MPI_INT64_T, MPI_MAX, 0, MPI_COMM_WORLD) ||
        MPI_Reduce(&dev, &dev_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD) ||
        MPI_Reduce(&cpu, &cpu_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD))
        return px_error_set(err, PX_ERR_MPI, NULL, 0, 0,
                            "MPI_Reduce of the step numbers failed");
    px_watchdog_leave();
    run->losses[j] = loss;
    run->grad_norms[j] = px_exec_grad_norm(t->ex);
    if (run->mtp_losses)
        run->mtp_losses[j] = px_exec_mtp_loss(t->ex);
    run->step_time_s[j] = dt_max;
    run->cpu_time_s[j] = cpu_max;
    if (device_clock)
        run->device_time_s[j] = dev_max;
    if (t->out)
        px_measure_print_step(t->out, i, j < t->warmup, loss, dt_max, t->plan, peak_max);
    return PX_OK;
}

px_status px_train_steps(const px_train *t, px_run *run, px_error *err)
{
    for (int64_t i = t->start; i < t->end; i++) {
        int64_t j = i - t->start; /* this run's j-th step */
        px_watchdog_set_step(i);
        if (j == t->warmup) { /* peak memory over the timed steps */
            px_exec_reset_peak(t->ex);
            if (t->be->reset_reserved_peak)
                t->be->reset_reserved_peak(t->be);
        }
        PX_TRY(one_step(t, i, run, err));
        if (px_exec_diverged(t->ex)) { /* the same on every rank */
            if (t->rank == 0)
                fprintf(stderr, "execute: diverged at step %lld: loss %g, gradient norm %g (NaN "
                                "or infinite); that step did not update the weights; stopping\n",
                        (long long)i, run->losses[j], px_exec_grad_norm(t->ex));
            run->diverged_step = i;
            run->warmup = j + 1 < t->warmup ? j + 1 : t->warmup; /* the steps run so far */
            run->steps = j + 1 - run->warmup;
            break;
        }
        if (t->save_dir && ((i + 1) % t->save_interval == 0 || i + 1 == t->end))
            PX_TRY(px_ckpt_save(t->ex, t->save_dir, i + 1, err));
    }
    return PX_OK;
}

/* Seconds per timed step by class, then the rank's own step, gathered on
 * rank 0 (into run->class_s on a synchronous backend). */
static px_status gather_classes(const px_train *t, px_run *run, px_error *err)
{
    double class_mine[PX_TRACE_N_CLASSES + 1];
    px_trace_class_means(t->trace, class_mine);
    class_mine[PX_TRACE_N_CLASSES] =
        t->trace->timed_steps ? t->trace->step_s / (double)t->trace->timed_steps : 0.0;
    bool sync_backend = !t->be->timer_start;
    if (sync_backend && t->rank == 0)
        run->class_s =
            calloc((size_t)t->world * (PX_TRACE_N_CLASSES + 1), sizeof *run->class_s);
    if ((sync_backend && t->rank == 0 && !run->class_s) ||
        MPI_Gather(class_mine, PX_TRACE_N_CLASSES + 1, MPI_DOUBLE, run->class_s,
                   PX_TRACE_N_CLASSES + 1, MPI_DOUBLE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
        return px_error_set(err, PX_ERR_MPI, NULL, 0, 0, "gathering the time by class failed");
    return PX_OK;
}

px_status px_train_gather(const px_train *t, px_run *run, px_error *err)
{
    px_backend *be = t->be;
    const px_memtrack *mt = px_exec_memory(t->ex);
    /* per rank: tracked peak, its breakdown by kind, the device allocator's
     * reserved peak (-1 where the backend has none), the host bytes */
    enum { N_MEM = 3 + PX_MEM_KINDS };
    int64_t mine[N_MEM];
    mine[0] = mt->peak_bytes;
    for (int k = 0; k < PX_MEM_KINDS; k++)
        mine[1 + k] = mt->at_peak[k];
    mine[1 + PX_MEM_KINDS] = be->reserved_peak_bytes ? be->reserved_peak_bytes(be) : -1;
    mine[2 + PX_MEM_KINDS] = mt->host_peak_bytes;
    int64_t *all = calloc((size_t)t->world * N_MEM, sizeof *all);
    if (be->reserved_peak_bytes)
        run->reserved_peak_bytes = calloc((size_t)t->world, sizeof *run->reserved_peak_bytes);
    if (!all || (be->reserved_peak_bytes && !run->reserved_peak_bytes) ||
        MPI_Gather(mine, N_MEM, MPI_INT64_T, all, N_MEM, MPI_INT64_T, 0, MPI_COMM_WORLD) !=
            MPI_SUCCESS) {
        free(all);
        return px_error_set(err, PX_ERR_MPI, NULL, 0, 0, "gathering the peak memory failed");
    }
    px_status st = t->trace ? gather_classes(t, run, err) : PX_OK;
    if (st == PX_OK && t->rank == 0)
        for (int r = 0; r < t->world; r++) {
            run->peak_memory_bytes[r] = all[r * N_MEM];
            for (int k = 0; k < PX_MEM_KINDS; k++)
                run->peak_breakdown[r][k] = all[r * N_MEM + 1 + k];
            if (run->reserved_peak_bytes)
                run->reserved_peak_bytes[r] = all[r * N_MEM + 1 + PX_MEM_KINDS];
            run->host_bytes[r] = all[r * N_MEM + 2 + PX_MEM_KINDS];
        }
    free(all);
    return st;
}

void px_train_run_free(px_run *run)
{
    free(run->losses);
    free(run->grad_norms);
    free(run->mtp_losses);
    free(run->step_time_s);
    free(run->cpu_time_s);
    free(run->device_time_s);
    free(run->reserved_peak_bytes);
    free(run->peak_memory_bytes);
    free(run->peak_breakdown);
    free(run->host_bytes);
    free(run->class_s);
    px_measure_free_stages(run);
}
