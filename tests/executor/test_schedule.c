/* test_schedule — pipeline op orders without MPI: every (chunk, micro-batch)
 * runs F once and B once, B after its F (and W once after B under ZB-H1), the dependencies between stages
 * can be met (simulated with unbounded buffers), and the activation sets in
 * flight follow the schedule: GPipe m, 1F1B pp - stage, interleaved more than
 * 1F1B on stage 0. */
#include <stdlib.h>
#include <string.h>

#include "px_schedule.h"
#include "px_test.h"

#define MAXOPS 768

/* Simulates all stages: an op may run when its input exists (F of model
 * chunk c-1 done for F; B of chunk c+1 done for B, or F of the last chunk for
 * its B).  Returns 1 when every op of every stage ran (no deadlock). */
static int simulate(px_schedule s, int pp, int vpp, int m)
{
    px_sched_op ops[16][MAXOPS];
    int n[16], pos[16] = {0};
    px_error err;
    for (int st = 0; st < pp; st++)
        if (px_schedule_build(s, pp, vpp, st, m, ops[st], &n[st], &err))
            return 0;
    int chunks = pp * vpp;
    if (chunks < 1 || chunks > 64 || m < 1 || m > 64)
        return 0;
    char fdone[64 * 64] = {0}, bdone[64 * 64] = {0};
    int progress = 1, remaining = 0;
    for (int st = 0; st < pp; st++)
        remaining += n[st];
    while (progress && remaining) {
        progress = 0;
        for (int st = 0; st < pp; st++) {
            if (pos[st] == n[st])
                continue;
            px_sched_op op = ops[st][pos[st]];
            int c = op.chunk * pp + st, i = op.micro;
            int ready = op.kind == 'F'   ? (c == 0 || fdone[(c - 1) * m + i])
                        : op.kind == 'W' ? bdone[c * m + i]
                                         : (fdone[c * m + i] &&
                                            (c == chunks - 1 || bdone[(c + 1) * m + i]));
            if (!ready)
                continue;
            if (op.kind != 'W')
                (op.kind == 'F' ? fdone : bdone)[c * m + i] = 1;
            pos[st]++;
            remaining--;
            progress = 1;
        }
    }
    return remaining == 0;
}

static void check_well_formed(px_schedule s, int pp, int vpp, int m)
{
    for (int st = 0; st < pp; st++) {
        px_sched_op ops[MAXOPS];
        int n = 0;
        px_error err;
        CHECK(px_schedule_build(s, pp, vpp, st, m, ops, &n, &err) == PX_OK);
        int zb = s == PX_SCHED_ZB_H1;
        CHECK(n == (2 + zb) * vpp * m);
        int seen_f[64] = {0}, seen_b[64] = {0}, seen_w[64] = {0};
        for (int i = 0; i < n; i++) {
            int id = ops[i].chunk * m + ops[i].micro;
            CHECK(ops[i].chunk >= 0 && ops[i].chunk < vpp && ops[i].micro >= 0 &&
                  ops[i].micro < m);
            if (ops[i].kind == 'F') {
                seen_f[id]++;
            } else if (ops[i].kind == 'B') {
                CHECK(seen_f[id] == 1); /* backward after its forward */
                seen_b[id]++;
            } else {
                CHECK(zb && seen_b[id] == 1); /* W after its B, only in ZB */
                seen_w[id]++;
            }
        }
        for (int i = 0; i < vpp * m; i++)
            CHECK(seen_f[i] == 1 && seen_b[i] == 1 && seen_w[i] == zb);
    }
    CHECK_MSG(simulate(s, pp, vpp, m), "%s pp %d vpp %d m %d deadlocks", px_schedule_name(s),
              pp, vpp, m);
}

static int in_flight(px_schedule s, int pp, int vpp, int stage, int m)
{
    px_sched_op ops[MAXOPS];
    int n = 0;
    px_error err;
    if (px_schedule_build(s, pp, vpp, stage, m, ops, &n, &err))
        return -1;
    return px_schedule_max_in_flight(ops, n);
}

int main(void)
{
    int pps[] = {1, 2, 3, 4};
    for (int i = 0; i < 4; i++)
        for (int m = 1; m <= 8; m++) {
            check_well_formed(PX_SCHED_GPIPE, pps[i], 1, m);
            check_well_formed(PX_SCHED_1F1B, pps[i], 1, m);
        }
    for (int i = 0; i < 4; i++)
        for (int m = 1; m <= 8; m++)
            check_well_formed(PX_SCHED_ZB_H1, pps[i], 1, m);
    check_well_formed(PX_SCHED_INTERLEAVED, 2, 2, 4);
    check_well_formed(PX_SCHED_INTERLEAVED, 4, 2, 4);
    check_well_formed(PX_SCHED_INTERLEAVED, 4, 2, 8);
    check_well_formed(PX_SCHED_INTERLEAVED, 2, 3, 6);
    check_well_formed(PX_SCHED_ZB_H1, 2, 2, 4);
    check_well_formed(PX_SCHED_ZB_H1, 4, 2, 4);
    check_well_formed(PX_SCHED_ZB_H1, 4, 2, 8);
    check_well_formed(PX_SCHED_ZB_H1, 2, 3, 6);

    /* Memory follows the schedule. */
    CHECK(in_flight(PX_SCHED_GPIPE, 4, 1, 0, 8) == 8);
    for (int st = 0; st < 4; st++)
        CHECK(in_flight(PX_SCHED_1F1B, 4, 1, st, 8) == 4 - st);
    CHECK(in_flight(PX_SCHED_1F1B, 4, 1, 0, 2) == 2); /* m < pp: all of them */
    /* ZB-H1: W lags B by `stage`, so every stage holds pp (1F1B's stage-0 peak). */
    for (int st = 0; st < 4; st++)
        CHECK(in_flight(PX_SCHED_ZB_H1, 4, 1, st, 8) == 4);
    /* Interleaved: stage 0 holds more chunk-sets than 1F1B's pp, each 1/vpp the size. */
    int il = in_flight(PX_SCHED_INTERLEAVED, 4, 2, 0, 8);
    CHECK(il > 4 && il <= 2 * 8);
    /* ZB-H1 interleaved: stage 0 (no lag) holds what interleaved holds; the
     * last stage holds more (its W's wait), and never more than stage 0 plus
     * its lag. */
    CHECK(in_flight(PX_SCHED_ZB_H1, 4, 2, 0, 8) == il);
    int zl = in_flight(PX_SCHED_ZB_H1, 4, 2, 3, 8), l3 = in_flight(PX_SCHED_INTERLEAVED, 4, 2, 3, 8);
    CHECK_MSG(zl > l3 && zl <= l3 + 3, "zb-h1 vpp 2 last stage holds %d (interleaved %d)", zl, l3);

    px_sched_op ops[MAXOPS];
    int n;
    px_error err;
    CHECK(px_schedule_build(PX_SCHED_ZB_H2, 2, 1, 0, 4, ops, &n, &err) == PX_ERR_UNSUPPORTED);
    CHECK(px_schedule_build(PX_SCHED_ZB_H1, 4, 2, 0, 6, ops, &n, &err) == PX_ERR_INVALID);
    CHECK(px_schedule_build(PX_SCHED_INTERLEAVED, 4, 2, 0, 6, ops, &n, &err) == PX_ERR_INVALID);
    CHECK(strstr(err.msg, "multiple of") != NULL);
    CHECK(px_schedule_build(PX_SCHED_1F1B, 2, 2, 0, 4, ops, &n, &err) == PX_ERR_INVALID);
    return px_test_result("schedule");
}
