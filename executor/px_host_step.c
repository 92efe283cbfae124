/* px_host_step.c — the offloaded share's update on a host thread.
 *
 * ZeRO-Offload and Megatron-Core's hybrid optimizer step the host's share
 * on the CPU while the GPU steps its own; the updated weights then go back
 * into the compute copy before the next forward.  Here one thread per step
 * takes the host's ranges as px_ex_adamw (px_optim.c) queues them, each with
 * the function that updates it, so a run with offload computes what one
 * without does.  The thread makes no MPI call (MPI_THREAD_FUNNELED). */
#include <pthread.h>
#include <stdlib.h>

#include "px_exec_internal.h"

struct px_host_step {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool running; /* a thread exists for this step */
    bool closed;  /* no more jobs this step */
    px_host_job *jobs;
    int cap, n_jobs, next;
    px_exec *ex;
};

static void *worker(void *arg)
{
    struct px_host_step *h = arg;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        if (h->next < h->n_jobs) {
            px_host_job j = h->jobs[h->next++];
            pthread_mutex_unlock(&h->mu);
            j.run(h->ex, &j);
            pthread_mutex_lock(&h->mu);
        } else if (h->closed) {
            break;
        } else {
            pthread_cond_wait(&h->cv, &h->mu);
        }
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

px_status px_host_step_create(px_exec *ex, int capacity, px_error *err)
{
    struct px_host_step *h = calloc(1, sizeof *h);
    px_host_job *jobs = calloc((size_t)(capacity > 0 ? capacity : 1), sizeof *jobs);
    if (!h || !jobs) {
        free(h);
        free(jobs);
        return PX_FAIL(err, PX_ERR_NOMEM, "optimizer offload: out of memory (host queue)");
    }
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    h->jobs = jobs;
    h->cap = capacity > 0 ? capacity : 1;
    h->ex = ex;
    ex->host_step = h;
    return PX_OK;
}

void px_host_step_push(px_exec *ex, const px_host_job *j)
{
    struct px_host_step *h = ex->host_step;
    if (!h) {
        j->run(ex, j);
        return;
    }
    pthread_mutex_lock(&h->mu);
    if (!h->running && h->n_jobs < h->cap) { /* the step's first host range */
        h->closed = false;
        h->running = pthread_create(&h->thread, NULL, worker, h) == 0;
    }
    bool queued = h->running && h->n_jobs < h->cap;
    if (queued) {
        h->jobs[h->n_jobs++] = *j;
        pthread_cond_signal(&h->cv);
    }
    pthread_mutex_unlock(&h->mu);
    if (!queued) /* the queue is full or no thread started: run it here */
        j->run(ex, j);
}

void px_host_step_join(px_exec *ex)
{
    struct px_host_step *h = ex->host_step;
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    bool running = h->running;
    h->closed = true;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    if (running)
        pthread_join(h->thread, NULL);
    h->running = false;
    h->n_jobs = h->next = 0;
}

void px_host_step_destroy(px_exec *ex)
{
    struct px_host_step *h = ex->host_step;
    if (!h)
        return;
    px_host_step_join(ex);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    free(h->jobs);
    free(h);
    ex->host_step = NULL;
}
