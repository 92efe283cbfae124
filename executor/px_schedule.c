/* px_schedule.c — GPipe, 1F1B, interleaved 1F1B and ZB-H1 op orders. */
#include <stdbool.h>
#include <stddef.h>

#include "px_schedule.h"

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

px_status px_schedule_build(px_schedule s, int pp, int vpp, int stage, int n_micro,
                            px_sched_op *ops, int *n_ops, px_error *err)
{
    int n = 0;
    if (pp < 1 || vpp < 1 || stage < 0 || stage >= pp || n_micro < 1)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "schedule: pp = %d, vpp = %d, stage = %d, m = %d: need pp, vpp, m >= 1 "
                       "and 0 <= stage < pp",
                       pp, vpp, stage, n_micro);
    if (s == PX_SCHED_ZB_H2)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "schedule \"zb-h2\" is not supported by this executor; supported: "
                       "gpipe, 1f1b, interleaved, zb-h1");
    if (vpp > 1 && s != PX_SCHED_INTERLEAVED && s != PX_SCHED_ZB_H1)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "vpp = %d needs schedule \"interleaved\" or \"zb-h1\" (got \"%s\")",
                       vpp, px_schedule_name(s));
    if (vpp > 1) { /* interleaved; under ZB-H1 with W split off as below */
        if (n_micro % pp != 0)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "interleaved schedule: micro-batches m = %d must be a multiple of "
                           "pp = %d",
                           n_micro, pp);
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
            if (zb && w < b - stage) /* as with vpp = 1: W lags B by `stage` */
                ops[n++] = interleaved_op('W', w++, pp, vpp);
        }
        while (zb && w < total)
            ops[n++] = interleaved_op('W', w++, pp, vpp);
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
            if (zb && w < b - stage) /* W lags B by `stage` micro-batches */
                ops[n++] = (px_sched_op){'W', 0, w++};
        }
        while (zb && w < n_micro)
            ops[n++] = (px_sched_op){'W', 0, w++};
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
