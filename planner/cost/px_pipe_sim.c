/* px_pipe_sim.c — see px_pipe_sim.h. */
#include "px_pipe_sim.h"

#include <stdbool.h>
#include <stdlib.h>

#include "px_schedule.h"

static double op_seconds(const px_sched_op *op, int mc, const double *f_s, const double *b_s,
                         const double *w_s, bool has_w)
{
    if (op->kind == 'F')
        return f_s[mc];
    if (op->kind == 'W')
        return w_s[mc];
    return has_w ? b_s[mc] - w_s[mc] : b_s[mc];
}

px_status px_pipe_sim_step(px_schedule s, int pp, int vpp, int n_micro, const double *f_s,
                           const double *b_s, const double *w_s, double msg_s, double *step_s,
                           px_error *err)
{
    *step_s = 0.0;
    px_timeline tl;
    PX_TRY(px_timeline_build(&tl, s, pp, vpp, n_micro, err));
    double *t = calloc((size_t)pp, sizeof *t), *arrive = calloc((size_t)pp, sizeof *arrive);
    int *next = calloc((size_t)pp, sizeof *next);
    bool *has_w = calloc((size_t)pp, sizeof *has_w);
    if (!t || !arrive || !next || !has_w) {
        free(t);
        free(arrive);
        free(next);
        free(has_w);
        px_timeline_free(&tl);
        return PX_FAIL(err, PX_ERR_NOMEM, "pipeline timeline: out of memory");
    }
    for (int r = 0; r < pp; r++)
        for (int i = 0; i < tl.n_ops[r]; i++)
            has_w[r] = has_w[r] || tl.ops[r][i].kind == 'W';
    int j = 0; /* messages are ordered by slot */
    for (int k = 0; k < tl.n_slots; k++) {
        /* each stage's op of slot k (at most one) */
        for (int r = 0; r < pp; r++)
            if (next[r] < tl.n_ops[r] && tl.slot[r][next[r]] == k) {
                const px_sched_op *op = &tl.ops[r][next[r]++];
                t[r] += op_seconds(op, op->chunk * pp + r, f_s, b_s, w_s, has_w[r]);
            }
        /* phase k: a stage's batch completes once each peer of it has
         * posted its own (a send completes when its receive is posted) */
        for (int r = 0; r < pp; r++)
            arrive[r] = t[r];
        int j_end = j;
        while (j_end < tl.n_msgs && tl.msgs[j_end].slot == k)
            j_end++;
        for (int r = 0; r < pp; r++) {
            double end = arrive[r];
            bool in = false;
            for (int q = j; q < j_end; q++) {
                const px_pipe_msg *m = &tl.msgs[q];
                int peer = m->src == r ? m->dst : m->dst == r ? m->src : -1;
                if (peer < 0)
                    continue;
                in = true;
                end = arrive[peer] > end ? arrive[peer] : end;
            }
            if (in)
                t[r] = end + msg_s;
        }
        j = j_end;
    }
    for (int r = 0; r < pp; r++)
        *step_s = t[r] > *step_s ? t[r] : *step_s;
    free(t);
    free(arrive);
    free(next);
    free(has_w);
    px_timeline_free(&tl);
    return PX_OK;
}
