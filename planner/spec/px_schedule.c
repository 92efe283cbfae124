/* px_schedule.c — GPipe, 1F1B, interleaved 1F1B, ZB-H1 and ZB-H2 op orders. */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "px_schedule.h"

#include "px_plan_check.h"

/* Megatron's interleaved order: virtual micro-step k runs model chunk
 * (k / pp) % vpp of micro-batch (k / (pp * vpp)) * pp + k % pp; backwards (and
 * their weight-gradient halves W) walk the chunks in reverse. */
static px_sched_op interleaved_op(char kind, int k, int pp, int vpp)
{
    int group = k / (pp * vpp), in_group = k % (pp * vpp);
    int chunk = in_group / pp;
    if (kind != 'F')
        chunk = vpp - 1 - chunk;
    return (px_sched_op){kind, chunk, group * pp + in_group % pp};
}

/* ZB-H2 (Qi et al. 2023, section 2.2), built the way the paper draws it: a
 * unit-time simulation of all pp stages (T_F = T_B = T_W = 1, free
 * communication) in which, at every slot, each stage runs the first op that
 * is ready among
 *   1. B of its oldest micro-batch without B, once this stage's F of it ran
 *      in an earlier slot and (except on the last stage) the next stage's B
 *      of it did;
 *   2. F of its next micro-batch, once the previous stage's F of it ran in an
 *      earlier slot, if at most 2pp - 1 micro-batches would then be past F
 *      and not yet through W;
 *   3. W of its oldest micro-batch past B;
 * and idles otherwise.  This stage's ops, in slot order, are its list.  Why
 * a simulation rather than a formula: the steady phase switches from B's
 * arriving every second slot (while the last stage can still alternate F
 * and B) to every third (F-B-W), and the switch lands at a different op on
 * each stage; the rule above is short, and the properties the engine relies
 * on are checked by tests/unit/test_schedule.c: stage i starts with
 * min(2(pp - i) - 1, m) forwards (what fills the slots before its first B
 * arrives), holds at most min(2pp - 1, m) micro-batches between F and W, and
 * with m >= 2pp - 1 ends with 2i + 1 W's and never idles between its first
 * and last op (the paper's parallelogram; the whole step takes 3m + pp - 1
 * slots).  The simulation only decides the order: every rank computes the
 * same one, and the engine then runs it at whatever speed the ops take. */
static px_status zb_h2_order(int pp, int stage, int n_micro, px_sched_op *ops, int *n_ops,
                             px_error *err)
{
    int limit = 2 * pp - 1;
    /* counts after the current slot (nf, nb, nw) and before it (pf, pb) */
    int *cnt = calloc((size_t)pp * 5, sizeof *cnt);
    if (!cnt)
        return PX_FAIL(err, PX_ERR_NOMEM, "schedule zb-h2: out of memory (pp = %d)", pp);
    int *nf = cnt, *nb = cnt + pp, *nw = cnt + 2 * pp, *pf = cnt + 3 * pp, *pb = cnt + 4 * pp;
    int n = 0;
    while (nw[stage] < n_micro) {
        for (int i = 0; i < pp; i++) {
            pf[i] = nf[i];
            pb[i] = nb[i];
        }
        bool progress = false;
        for (int i = 0; i < pp; i++) {
            char kind = 0;
            int micro = 0;
            if (nb[i] < n_micro && nb[i] < pf[i] && (i == pp - 1 || pb[i + 1] > nb[i])) {
                kind = 'B';
                micro = nb[i]++;
            } else if (nf[i] < n_micro && (i == 0 || pf[i - 1] > nf[i]) &&
                       nf[i] - nw[i] < limit) {
                kind = 'F';
                micro = nf[i]++;
            } else if (nw[i] < nb[i]) {
                kind = 'W';
                micro = nw[i]++;
            }
            if (!kind)
                continue;
            progress = true;
            if (i == stage)
                ops[n++] = (px_sched_op){kind, 0, micro};
        }
        if (!progress) { /* cannot happen: some stage always has a ready op */
            free(cnt);
            return PX_FAIL(err, PX_ERR_INTERNAL,
                           "schedule zb-h2: simulation stalled (pp = %d, stage = %d, m = %d)", pp,
                           stage, n_micro);
        }
    }
    free(cnt);
    *n_ops = n;
    return PX_OK;
}

px_status px_schedule_build(px_schedule s, int pp, int vpp, int stage, int n_micro,
                            px_sched_op *ops, int *n_ops, px_error *err)
{
    int n = 0;
    if (pp < 1 || vpp < 1 || stage < 0 || stage >= pp || n_micro < 1)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "schedule: pp = %d, vpp = %d, stage = %d, m = %d: need pp, vpp, m >= 1 "
                       "and 0 <= stage < pp",
                       pp, vpp, stage, n_micro);
    /* the plan rules (px_plan_check.h) under the executors' capabilities */
    px_caps caps;
    px_caps_cpu_executor(&caps);
    px_status st = px_rule_schedule(pp, vpp, s, &caps, err);
    if (st == PX_OK)
        st = px_rule_batch(pp, vpp, s, 1, n_micro, err);
    if (st != PX_OK)
        return st;
    if (s == PX_SCHED_ZB_H2)
        return zb_h2_order(pp, stage, n_micro, ops, n_ops, err);
    if (vpp > 1) { /* interleaved; under ZB-H1 with W split off as below */
        bool zb = s == PX_SCHED_ZB_H1;
        int total = n_micro * vpp;
        int warm = (pp - stage - 1) * 2 + (vpp - 1) * pp;
        if (warm > total)
            warm = total;
        int f = 0, b = 0, w = 0;
        for (; f < warm; f++)
            ops[n++] = interleaved_op('F', f, pp, vpp);
        while (b < total) {
            if (f < total)
                ops[n++] = interleaved_op('F', f++, pp, vpp);
            ops[n++] = interleaved_op('B', b++, pp, vpp);
            if (zb) /* as with vpp = 1: W right after its B */
                ops[n++] = interleaved_op('W', w++, pp, vpp);
        }
    } else if (s == PX_SCHED_GPIPE) {
        for (int i = 0; i < n_micro; i++)
            ops[n++] = (px_sched_op){'F', 0, i};
        for (int i = 0; i < n_micro; i++)
            ops[n++] = (px_sched_op){'B', 0, i};
    } else { /* 1F1B (and "interleaved" with vpp = 1, which is the same), ZB-H1 */
        bool zb = s == PX_SCHED_ZB_H1;
        int warm = pp - stage - 1;
        if (warm > n_micro)
            warm = n_micro;
        int f = 0, b = 0, w = 0;
        for (; f < warm; f++)
            ops[n++] = (px_sched_op){'F', 0, f};
        while (b < n_micro) {
            if (f < n_micro)
                ops[n++] = (px_sched_op){'F', 0, f++};
            ops[n++] = (px_sched_op){'B', 0, b++};
            /* ZB-H1: W of the same micro-batch at once.  In the steady phase
             * it frees the activations before the next F, so the stage holds
             * the 1F1B count min(p - i, m); in the cool-down it runs while
             * the next B's gradient is still on its way from stage i + 1,
             * which is the bubble 1F1B leaves there (the order a unit-time
             * simulation with B before F before W and at most p - i in
             * flight also gives). */
            if (zb)
                ops[n++] = (px_sched_op){'W', 0, w++};
        }
    }
    *n_ops = n;
    return PX_OK;
}

int px_schedule_max_in_flight(const px_sched_op *ops, int n_ops)
{
    int live = 0, peak = 0;
    bool has_w = false;
    for (int i = 0; i < n_ops; i++)
        has_w |= ops[i].kind == 'W';
    char done = has_w ? 'W' : 'B';
    for (int i = 0; i < n_ops; i++) {
        if (ops[i].kind == 'F')
            live++;
        else if (ops[i].kind == done)
            live--;
        peak = live > peak ? live : peak;
    }
    return peak;
}

int px_schedule_max_b_to_w(const px_sched_op *ops, int n_ops)
{
    int peak = px_schedule_max_in_flight(ops, n_ops);
    int f = 0, b = 0, w = 0, best = 0;
    bool has_w = false;
    for (int i = 0; i < n_ops; i++) {
        f += ops[i].kind == 'F';
        b += ops[i].kind == 'B';
        w += ops[i].kind == 'W';
        has_w |= ops[i].kind == 'W';
        if (f - w == peak && b - w > best)
            best = b - w;
    }
    return has_w ? best : 0; /* without W ops nothing waits between B and W */
}

/* ---- timeline ------------------------------------------------------------------ */

void px_timeline_free(px_timeline *tl)
{
    for (int r = 0; tl->ops && r < tl->pp; r++) {
        free(tl->ops[r]);
        if (tl->slot)
            free(tl->slot[r]);
    }
    free(tl->ops);
    free(tl->slot);
    free(tl->n_ops);
    free(tl->msgs);
    *tl = (px_timeline){0};
}

px_status px_timeline_build(px_timeline *tl, px_schedule s, int pp, int vpp, int n_micro,
                            px_error *err)
{
    *tl = (px_timeline){0};
    int cap = 3 * vpp * n_micro, n_mc = pp * vpp;
    tl->pp = pp;
    tl->n_ops = calloc((size_t)pp, sizeof *tl->n_ops);
    tl->ops = calloc((size_t)pp, sizeof *tl->ops);
    tl->slot = calloc((size_t)pp, sizeof *tl->slot);
    /* slot at which F / B of (model chunk, micro) ran, -1 before */
    int *f_at = malloc((size_t)n_mc * n_micro * sizeof *f_at);
    int *b_at = malloc((size_t)n_mc * n_micro * sizeof *b_at);
    int *next = calloc((size_t)pp, sizeof *next);
    /* at most one message per op */
    tl->msgs = malloc((size_t)pp * cap * sizeof *tl->msgs);
    px_status st = PX_OK;
    if (!tl->n_ops || !tl->ops || !tl->slot || !f_at || !b_at || !next || !tl->msgs)
        st = PX_FAIL(err, PX_ERR_NOMEM, "pipeline timeline: out of memory");
    for (int r = 0; r < pp && !st; r++) {
        tl->ops[r] = malloc((size_t)cap * sizeof **tl->ops);
        tl->slot[r] = malloc((size_t)cap * sizeof **tl->slot);
        if (!tl->ops[r] || !tl->slot[r])
            st = PX_FAIL(err, PX_ERR_NOMEM, "pipeline timeline: out of memory");
        else
            st = px_schedule_build(s, pp, vpp, r, n_micro, tl->ops[r], &tl->n_ops[r], err);
    }
    for (int i = 0; !st && i < n_mc * n_micro; i++)
        f_at[i] = b_at[i] = -1;
    int left = 0;
    for (int r = 0; !st && r < pp; r++)
        left += tl->n_ops[r];
    for (int t = 0; !st && left > 0; t++) {
        int ran = 0;
        for (int r = 0; r < pp; r++) {
            if (next[r] == tl->n_ops[r])
                continue;
            px_sched_op op = tl->ops[r][next[r]];
            int mc = op.chunk * pp + r;
            /* the neighbour's output must have left in an earlier slot */
            int dep = 0; /* slot of the input's producer; -1 before it ran */
            if (op.kind == 'F' && mc > 0)
                dep = f_at[(mc - 1) * n_micro + op.micro];
            else if (op.kind == 'B' && mc < n_mc - 1)
                dep = b_at[(mc + 1) * n_micro + op.micro];
            else
                dep = -2; /* no input from a neighbour */
            if (dep != -2 && (dep < 0 || dep >= t))
                continue;
            tl->slot[r][next[r]++] = t;
            ran++;
            if (op.kind == 'F')
                f_at[mc * n_micro + op.micro] = t;
            else if (op.kind == 'B')
                b_at[mc * n_micro + op.micro] = t;
            if (op.kind == 'F' && mc < n_mc - 1)
                tl->msgs[tl->n_msgs++] = (px_pipe_msg){t, r, (mc + 1) % pp, 'F', mc, op.micro};
            else if (op.kind == 'B' && mc > 0)
                tl->msgs[tl->n_msgs++] = (px_pipe_msg){t, r, (mc - 1) % pp, 'B', mc, op.micro};
            tl->n_slots = t + 1;
        }
        left -= ran;
        /* Nothing ran in this slot: the next one would be the same (no
         * message left in it), so some op waits for an input nothing
         * produces before it, an inconsistent schedule. */
        if (!ran)
            st = PX_FAIL(err, PX_ERR_INTERNAL,
                         "pipeline timeline: schedule %s (pp %d, vpp %d, %d micro-batches) "
                         "stalls at slot %d",
                         px_schedule_name(s), pp, vpp, n_micro, t);
    }
    free(f_at);
    free(b_at);
    free(next);
    if (st)
        px_timeline_free(tl);
    return st;
}
