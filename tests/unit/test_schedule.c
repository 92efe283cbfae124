/* test_schedule — pipeline op orders without MPI: every (chunk, micro-batch)
 * runs F once and B once, B after its F (and W once after B under ZB-H1 and
 * ZB-H2), the dependencies between stages can be met (simulated with
 * unbounded buffers), and the activation sets in flight follow the schedule:
 * GPipe m, 1F1B and ZB-H1 min(pp - stage, m), interleaved more than 1F1B on
 * stage 0, ZB-H2 min(2pp - 1, m) on every stage; and for both zero-bubble
 * schedules the counts the cost model charges (px_cost_inflight,
 * px_cost_inflight_bw) are what the orders hold.  ZB-H2's shape is checked by
 * running the lists at unit op times: warm-up forwards, the W tail, no idle
 * slot between a stage's first and last op (the parallelogram) and the step
 * length; ZB-H1's cool-down W's must beat 1F1B's 3(m + pp - 1) slots.
 * The p2p timeline: every message leaves before the op that takes it, and
 * the engine's loop (ops, and between them the message phases as batches
 * with NCCL's rendezvous rule) runs to the end on every stage. */
#include <stdlib.h>
#include <string.h>

#include "px_cost.h"
#include "px_schedule.h"
#include "px_test.h"

#define MAXOPS 768

static int is_zb(px_schedule s)
{
    return s == PX_SCHED_ZB_H1 || s == PX_SCHED_ZB_H2;
}

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
        int zb = is_zb(s);
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

/* Runs every stage's list at unit op times (T_F = T_B = T_W = 1, free
 * communication), each op as soon as its inputs exist (an input made in slot
 * t is usable from slot t + 1).  Fills start[stage][k], the slot of op k, and
 * returns the number of slots of the step, or -1 on deadlock. */
static int unit_time(px_schedule s, int pp, int m, int start[][MAXOPS], int *n_ops)
{
    px_sched_op ops[16][MAXOPS];
    int pos[16] = {0}, fslot[16][64], bslot[16][64];
    px_error err;
    if (pp > 16 || m > 64)
        return -1;
    for (int st = 0; st < pp; st++) {
        if (px_schedule_build(s, pp, 1, st, m, ops[st], &n_ops[st], &err))
            return -1;
        for (int i = 0; i < m; i++)
            fslot[st][i] = bslot[st][i] = -1;
    }
    int t = 0, left = 0;
    for (int st = 0; st < pp; st++)
        left += n_ops[st];
    for (; left > 0; t++) {
        if (t > 16 * MAXOPS)
            return -1;
        int ran[16] = {0};
        for (int st = 0; st < pp; st++) {
            if (pos[st] == n_ops[st])
                continue;
            px_sched_op op = ops[st][pos[st]];
            int i = op.micro;
#define DONE_BEFORE(slot) ((slot) >= 0 && (slot) < t)
            int ready = op.kind == 'F'   ? (st == 0 || DONE_BEFORE(fslot[st - 1][i]))
                        : op.kind == 'W' ? DONE_BEFORE(bslot[st][i])
                                         : DONE_BEFORE(fslot[st][i]) &&
                                               (st == pp - 1 || DONE_BEFORE(bslot[st + 1][i]));
#undef DONE_BEFORE
            ran[st] = ready;
        }
        for (int st = 0; st < pp; st++) {
            if (!ran[st])
                continue;
            px_sched_op op = ops[st][pos[st]];
            if (op.kind == 'F')
                fslot[st][op.micro] = t;
            else if (op.kind == 'B')
                bslot[st][op.micro] = t;
            start[st][pos[st]++] = t;
            left--;
        }
    }
    return t;
}

/* ZB-H2 as Qi et al. draw it, for pp stages and m micro-batches. */
static void check_zb_h2_shape(int pp, int m)
{
    int start[16][MAXOPS], n[16];
    int slots = unit_time(PX_SCHED_ZB_H2, pp, m, start, n);
    CHECK_MSG(slots > 0, "zb-h2 pp %d m %d deadlocks at unit times", pp, m);
    if (slots <= 0)
        return;
    /* The last stage cannot start before slot pp - 1 and has 3m ops: with
     * enough micro-batches ZB-H2 meets that bound. */
    if (m >= 2 * pp - 1)
        CHECK_MSG(slots == 3 * m + pp - 1, "zb-h2 pp %d m %d: %d slots, bound %d", pp, m, slots,
                  3 * m + pp - 1);
    for (int st = 0; st < pp; st++) {
        px_sched_op ops[MAXOPS];
        int k = 0;
        px_error err;
        CHECK(px_schedule_build(PX_SCHED_ZB_H2, pp, 1, st, m, ops, &k, &err) == PX_OK);
        int warm = 0, tail = 0;
        while (warm < k && ops[warm].kind == 'F')
            warm++;
        while (tail < k && ops[k - 1 - tail].kind == 'W')
            tail++;
        int want_warm = 2 * (pp - st) - 1 < m ? 2 * (pp - st) - 1 : m;
        CHECK_MSG(warm == want_warm, "zb-h2 pp %d m %d stage %d: %d warm-up forwards, want %d",
                  pp, m, st, warm, want_warm);
        int cap = 2 * pp - 1 < m ? 2 * pp - 1 : m;
        CHECK_MSG(px_schedule_max_in_flight(ops, k) == cap,
                  "zb-h2 pp %d m %d stage %d: %d in flight, want %d", pp, m, st,
                  px_schedule_max_in_flight(ops, k), cap);
        if (m >= 2 * pp - 1) {
            CHECK_MSG(tail == 2 * st + 1, "zb-h2 pp %d m %d stage %d: %d W's at the end", pp, m,
                      st, tail);
            /* the parallelogram: busy from slot `st` on, no idle slot inside */
            CHECK_MSG(start[st][0] == st && start[st][n[st] - 1] == st + n[st] - 1,
                      "zb-h2 pp %d m %d stage %d: slots %d..%d for %d ops", pp, m, st,
                      start[st][0], start[st][n[st] - 1], n[st]);
        }
    }
}

/* The zero-bubble memory the cost model charges for stage `st` is what the
 * order holds: px_cost_inflight activation sets (chunk-sets / vpp), of which
 * px_cost_inflight_bw are past B when they peak, and no moment has more past
 * B (so n_FW sets + n_BW gradient sets bound the stage's memory). */
static void check_zb_cost_counts(px_schedule s, int pp, int vpp, int m)
{
    for (int st = 0; st < pp; st++) {
        px_sched_op ops[MAXOPS];
        int n = 0;
        px_error err;
        if (px_schedule_build(s, pp, vpp, st, m, ops, &n, &err) != PX_OK) {
            CHECK_MSG(0, "%s pp %d vpp %d m %d: %s", px_schedule_name(s), pp, vpp, m, err.msg);
            return;
        }
        int fw = px_schedule_max_in_flight(ops, n), bw = px_schedule_max_b_to_w(ops, n);
        double want_fw = px_cost_inflight(s, pp, vpp, m, st) * vpp;
        double want_bw = px_cost_inflight_bw(s, pp, vpp, m, st) * vpp;
        CHECK_MSG(fw == want_fw && bw == want_bw,
                  "%s pp %d vpp %d m %d stage %d: order holds %d (%d past B), cost model %g "
                  "(%g)",
                  px_schedule_name(s), pp, vpp, m, st, fw, bw, want_fw, want_bw);
        int b = 0, w = 0, most = 0;
        for (int i = 0; i < n; i++) {
            b += ops[i].kind == 'B';
            w += ops[i].kind == 'W';
            most = b - w > most ? b - w : most;
        }
        CHECK_MSG(most == bw, "%s pp %d m %d stage %d: %d past B at some moment, %d at the peak",
                  px_schedule_name(s), pp, m, st, most, bw);
    }
}

/* ZB-H1 at unit op times: W's fill the cool-down, so the step is shorter
 * than 1F1B's 3(m + pp - 1) slots (B and W as one backward of two units)
 * once there is a cool-down (pp > 1); 3m + 2(pp - 1) is what the order
 * reaches with m >= pp. */
static void check_zb_h1_time(int pp, int m)
{
    int start[16][MAXOPS], n[16];
    int slots = unit_time(PX_SCHED_ZB_H1, pp, m, start, n);
    CHECK_MSG(slots > 0, "zb-h1 pp %d m %d deadlocks at unit times", pp, m);
    if (pp > 1)
        CHECK_MSG(slots < 3 * (m + pp - 1), "zb-h1 pp %d m %d: %d slots, 1F1B takes %d", pp, m,
                  slots, 3 * (m + pp - 1));
    if (m >= pp)
        CHECK_MSG(slots == 3 * m + 2 * (pp - 1), "zb-h1 pp %d m %d: %d slots, want %d", pp, m,
                  slots, 3 * m + 2 * (pp - 1));
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

/* The timeline of (s, pp, vpp, m) is consistent, and the engine's p2p loop
 * (px_exec.c px_exec_step: ops in order, the phases up to the next op's slot
 * between them, each phase one batch that completes only when every peer
 * with a message in it has posted the same phase) never blocks for good. */
static void check_timeline(px_schedule s, int pp, int vpp, int m)
{
    px_timeline tl;
    px_error err;
    px_status st = px_timeline_build(&tl, s, pp, vpp, m, &err);
    CHECK_MSG(st == PX_OK, "timeline %s pp %d vpp %d m %d: %s", px_schedule_name(s), pp, vpp,
              m, err.msg);
    if (st)
        return;
    int n_mc = pp * vpp;
    for (int r = 0; r < pp; r++)
        for (int i = 1; i < tl.n_ops[r]; i++)
            CHECK(tl.slot[r][i] > tl.slot[r][i - 1]);
    for (int k = 0; k < tl.n_msgs; k++) {
        const px_pipe_msg *g = &tl.msgs[k];
        int to = g->kind == 'F' ? g->mc + 1 : g->mc - 1;
        CHECK(to >= 0 && to < n_mc && g->src == g->mc % pp && g->dst == to % pp);
        CHECK(k == 0 || tl.msgs[k - 1].slot <= g->slot);
        /* one message per stage per phase */
        for (int q = k + 1; q < tl.n_msgs && tl.msgs[q].slot == g->slot; q++)
            CHECK(tl.msgs[q].src != g->src);
        /* the consumer runs after the phase */
        int found = 0;
        for (int i = 0; i < tl.n_ops[g->dst]; i++) {
            px_sched_op o = tl.ops[g->dst][i];
            if (o.kind == g->kind && o.chunk * pp + g->dst == to && o.micro == g->micro) {
                CHECK_MSG(tl.slot[g->dst][i] > g->slot,
                          "%s pp %d vpp %d m %d: %c of chunk %d micro %d at slot %d, its input "
                          "leaves at %d", px_schedule_name(s), pp, vpp, m, o.kind, to, o.micro,
                          tl.slot[g->dst][i], g->slot);
                found++;
            }
        }
        CHECK(found == 1);
    }
    /* The loop: at[r] = next op; phase[r] = next phase; blocked in a phase
     * until all its peers stand in it too. */
    int at[8] = {0}, phase[8] = {0}, done = 0, guard = 0;
    while (done < pp && guard++ < 100000) {
        done = 0;
        for (int r = 0; r < pp; r++) {
            int next_slot = at[r] < tl.n_ops[r] ? tl.slot[r][at[r]] : tl.n_slots;
            if (phase[r] >= next_slot) {
                if (at[r] < tl.n_ops[r])
                    at[r]++; /* run the op */
                else
                    done++;
                continue;
            }
            int t = phase[r], ready = 1;
            for (int k = 0; k < tl.n_msgs; k++) {
                const px_pipe_msg *g = &tl.msgs[k];
                if (g->slot != t || (g->src != r && g->dst != r))
                    continue;
                int peer = g->src == r ? g->dst : g->src;
                int peer_next = at[peer] < tl.n_ops[peer] ? tl.slot[peer][at[peer]] : tl.n_slots;
                /* the peer stands in phase t: it ran its ops before t and
                 * has not passed t (phase t lies before its next op) */
                if (phase[peer] < t || (phase[peer] == t && peer_next <= t))
                    ready = 0;
            }
            if (ready)
                phase[r]++;
        }
    }
    CHECK_MSG(done == pp, "%s pp %d vpp %d m %d: the p2p phases block", px_schedule_name(s), pp,
              vpp, m);
    px_timeline_free(&tl);
}

int main(void)
{
    int pps[] = {1, 2, 3, 4};
    for (int i = 0; i < 4; i++)
        for (int m = 1; m <= 8; m++) {
            check_well_formed(PX_SCHED_GPIPE, pps[i], 1, m);
            check_well_formed(PX_SCHED_1F1B, pps[i], 1, m);
        }
    /* ZB-H1: p = 1..4, m = 1..3p; stage i holds at most min(p - i, m)
     * micro-batches between F and W, the 1F1B count (Qi et al.: "the same
     * peak memory as 1F1B"), and exactly that many. */
    for (int pp = 1; pp <= 4; pp++)
        for (int m = 1; m <= 3 * pp; m++) {
            check_well_formed(PX_SCHED_ZB_H1, pp, 1, m);
            check_zb_h1_time(pp, m);
            for (int st = 0; st < pp; st++) {
                int want = pp - st < m ? pp - st : m, got = in_flight(PX_SCHED_ZB_H1, pp, 1, st, m);
                CHECK_MSG(got == want, "zb-h1 pp %d m %d stage %d: %d in flight, bound %d", pp,
                          m, st, got, want);
            }
        }
    /* the cost model's zero-bubble counts, p = 1..8, m = 1..3p */
    for (int pp = 1; pp <= 8; pp++)
        for (int m = 1; m <= 3 * pp; m++) {
            check_zb_cost_counts(PX_SCHED_ZB_H1, pp, 1, m);
            check_zb_cost_counts(PX_SCHED_ZB_H2, pp, 1, m);
            if (m % pp == 0 && pp > 1)
                check_zb_cost_counts(PX_SCHED_ZB_H1, pp, 2, m);
        }
    /* ZB-H2: p = 1..4 (and 8 for the shape), m = 1..3p. */
    for (int pp = 1; pp <= 4; pp++)
        for (int m = 1; m <= 3 * pp; m++) {
            check_well_formed(PX_SCHED_ZB_H2, pp, 1, m);
            check_zb_h2_shape(pp, m);
        }
    for (int m = 1; m <= 24; m += 5)
        check_zb_h2_shape(8, m);
    check_well_formed(PX_SCHED_INTERLEAVED, 2, 2, 4);
    check_well_formed(PX_SCHED_INTERLEAVED, 4, 2, 4);
    check_well_formed(PX_SCHED_INTERLEAVED, 4, 2, 8);
    check_well_formed(PX_SCHED_INTERLEAVED, 2, 3, 6);
    check_well_formed(PX_SCHED_ZB_H1, 2, 2, 4);
    check_well_formed(PX_SCHED_ZB_H1, 4, 2, 4);
    check_well_formed(PX_SCHED_ZB_H1, 4, 2, 8);
    check_well_formed(PX_SCHED_ZB_H1, 2, 3, 6);

    for (int pp = 1; pp <= 4; pp++)
        for (int m = 1; m <= 12; m++) {
            for (int sch = PX_SCHED_GPIPE; sch <= PX_SCHED_ZB_H2; sch++)
                if (sch != PX_SCHED_INTERLEAVED)
                    check_timeline((px_schedule)sch, pp, 1, m);
            for (int vpp = 2; vpp <= 3 && pp > 1 && m % pp == 0; vpp++) {
                check_timeline(PX_SCHED_INTERLEAVED, pp, vpp, m);
                check_timeline(PX_SCHED_ZB_H1, pp, vpp, m);
            }
        }
    check_timeline(PX_SCHED_ZB_H2, 8, 1, 24);
    check_timeline(PX_SCHED_INTERLEAVED, 8, 2, 16);

    /* Memory follows the schedule. */
    CHECK(in_flight(PX_SCHED_GPIPE, 4, 1, 0, 8) == 8);
    for (int st = 0; st < 4; st++)
        CHECK(in_flight(PX_SCHED_1F1B, 4, 1, st, 8) == 4 - st);
    CHECK(in_flight(PX_SCHED_1F1B, 4, 1, 0, 2) == 2); /* m < pp: all of them */
    /* ZB-H1: W right after B, so every stage holds what 1F1B holds. */
    for (int st = 0; st < 4; st++)
        CHECK(in_flight(PX_SCHED_ZB_H1, 4, 1, st, 8) == 4 - st);
    /* Interleaved: stage 0 holds more chunk-sets than 1F1B's pp, each 1/vpp the size. */
    int il = in_flight(PX_SCHED_INTERLEAVED, 4, 2, 0, 8);
    CHECK(il > 4 && il <= 2 * 8);
    /* ZB-H1 interleaved: every stage holds what interleaved holds. */
    for (int st = 0; st < 4; st++)
        CHECK_MSG(in_flight(PX_SCHED_ZB_H1, 4, 2, st, 8) ==
                      in_flight(PX_SCHED_INTERLEAVED, 4, 2, st, 8),
                  "zb-h1 vpp 2 stage %d holds %d (interleaved %d)", st,
                  in_flight(PX_SCHED_ZB_H1, 4, 2, st, 8),
                  in_flight(PX_SCHED_INTERLEAVED, 4, 2, st, 8));

    px_sched_op ops[MAXOPS];
    int n;
    px_error err;
    /* ZB-H2 holds more than 1F1B and ZB-H1 on stage 0 (the price of no
     * bubble), and 2pp - 1 on the last stage too. */
    CHECK(in_flight(PX_SCHED_ZB_H2, 4, 1, 0, 8) == 7 && in_flight(PX_SCHED_1F1B, 4, 1, 0, 8) == 4);
    CHECK(in_flight(PX_SCHED_ZB_H2, 4, 1, 3, 8) == 7);
    /* ZB-H2 has no interleaved form here: a clear "unsupported". */
    CHECK(px_schedule_build(PX_SCHED_ZB_H2, 2, 2, 0, 4, ops, &n, &err) == PX_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "zb-h2") != NULL && strstr(err.msg, "vpp") != NULL);
    CHECK(px_schedule_build(PX_SCHED_ZB_H1, 4, 2, 0, 6, ops, &n, &err) == PX_ERR_INVALID);
    CHECK(px_schedule_build(PX_SCHED_INTERLEAVED, 4, 2, 0, 6, ops, &n, &err) == PX_ERR_INVALID);
    CHECK(strstr(err.msg, "multiple of") != NULL);
    CHECK(px_schedule_build(PX_SCHED_1F1B, 2, 2, 0, 4, ops, &n, &err) == PX_ERR_INVALID);
    return px_test_result("schedule");
}
