/* The partitioner's memo: the same problem under the same options asked
 * again gets the same answer from the caller's store, and a problem that
 * differs in any field the solver reads (checked one field at a time, at the
 * end of each table) gets its own optimum, compared with the exhaustive
 * search, never the answer kept for the other.  The store is the caller's:
 * another store, or none, answers nothing from the first one's. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "px_partition.h"
#include "px_test.h"

/* Six uneven layers on 2 stages x 2 chunks, memory tight enough that some
 * layers recompute: GLPK's program, not one of the exact DPs. */
static void base_problem(px_partition_problem *pb)
{
    px_partition_problem_init(pb);
    pb->n_layers = 6;
    pb->pp = 2;
    pb->vpp = 2;
    pb->n_micro = 8;
    for (int i = 0; i < pb->n_layers; i++) {
        double t0 = 1e-3 * (1.0 + 0.3 * i);
        pb->layer_time_s[i][PX_RECOMPUTE_NONE] = t0;
        pb->layer_time_s[i][PX_RECOMPUTE_SELECTIVE] = t0 * 1.05;
        pb->layer_time_s[i][PX_RECOMPUTE_FULL] = t0 * 1.33;
        pb->layer_act_bytes[i][PX_RECOMPUTE_NONE] = 2000000000;
        pb->layer_act_bytes[i][PX_RECOMPUTE_SELECTIVE] = 1000000000;
        pb->layer_act_bytes[i][PX_RECOMPUTE_FULL] = 200000000;
        pb->layer_static_bytes[i] = 1000000000;
    }
    pb->head_time_s = 1e-3;
    pb->head_static_bytes = 500000000;
    for (int s = 0; s < pb->pp; s++)
        pb->in_flight[s] = px_partition_in_flight(PX_SCHED_INTERLEAVED, pb->pp, pb->vpp,
                                                  pb->n_micro, s);
    pb->mem_limit_bytes = 12000000000;
}

static bool same_answer(const px_partition_solution *a, const px_partition_solution *b, int L)
{
    return a->n_chunks == b->n_chunks &&
           memcmp(a->layers_per_chunk, b->layers_per_chunk,
                  (size_t)a->n_chunks * sizeof a->layers_per_chunk[0]) == 0 &&
           memcmp(a->layer_recompute, b->layer_recompute, (size_t)L) == 0 &&
           a->objective_s == b->objective_s && a->proven_optimal == b->proven_optimal &&
           a->exact_dp == b->exact_dp;
}

/* pb solved, and its objective the exhaustive search's. */
static void check_optimal(const char *what, const px_partition_problem *pb,
                          const px_partition_opts *o, px_partition_solution *got)
{
    static px_partition_solution want;
    px_error e1, e2;
    px_status s1 = px_partition_solve(pb, o, got, &e1);
    px_status s2 = px_partition_brute_force(pb, o, &want, &e2);
    CHECK_MSG(s1 == PX_OK && s2 == PX_OK, "%s: solve %s (%s), brute force %s (%s)", what,
              px_status_name(s1), e1.msg, px_status_name(s2), e2.msg);
    if (s1 == PX_OK && s2 == PX_OK)
        CHECK_MSG(got->proven_optimal &&
                      fabs(got->objective_s - want.objective_s) <= 2e-6 * want.objective_s,
                  "%s: objective %.9g, brute force %.9g", what, got->objective_s,
                  want.objective_s);
}

int main(void)
{
    static px_partition_problem pb, other;
    static px_partition_solution first, again, changed;
    px_partition_opts o;
    px_partition_opts_init(&o);
    CHECK(o.memo == NULL); /* no store unless the caller brings one */
    o.mip_gap = 0.0;
    o.time_limit_s = 30.0;
    px_partition_memo *memo = px_partition_memo_new(), *other_memo = px_partition_memo_new();
    CHECK(memo && other_memo);
    o.memo = memo;
    base_problem(&pb);
    check_optimal("base", &pb, &o, &first);
    CHECK(first.recompute_time_s > 0.0); /* memory binds: the program's case */
    CHECK(px_partition_memo_hits(memo) == 0);
    px_error err;
    CHECK(px_partition_solve(&pb, &o, &again, &err) == PX_OK);
    CHECK_MSG(same_answer(&first, &again, pb.n_layers), "the same problem, another answer");
    CHECK_MSG(px_partition_memo_hits(memo) == 1, "asked again: %d answers from the store",
              px_partition_memo_hits(memo));

    /* another store, and none, keep nothing of the first one's: each solves */
    px_partition_opts fresh = o;
    fresh.memo = other_memo;
    CHECK(px_partition_solve(&pb, &fresh, &again, &err) == PX_OK);
    CHECK(same_answer(&first, &again, pb.n_layers));
    CHECK(px_partition_memo_hits(other_memo) == 0);
    fresh.memo = NULL;
    CHECK(px_partition_solve(&pb, &fresh, &again, &err) == PX_OK);
    CHECK(same_answer(&first, &again, pb.n_layers));
    CHECK(px_partition_memo_hits(memo) == 1 && px_partition_memo_hits(other_memo) == 0);

    /* one field at a time, each to a value that moves the optimum */
    for (int field = 0; field < 7; field++) {
        other = pb;
        int last = pb.n_layers - 1;
        switch (field) {
        case 0: other.layer_time_s[last][PX_RECOMPUTE_NONE] *= 3.0;
                other.layer_time_s[last][PX_RECOMPUTE_SELECTIVE] *= 3.0;
                other.layer_time_s[last][PX_RECOMPUTE_FULL] *= 3.0; break;
        case 1: other.layer_act_bytes[last][PX_RECOMPUTE_NONE] *= 3; break;
        case 2: other.layer_static_bytes[last] *= 3; break;
        case 3: other.head_time_s *= 4.0; break;
        case 4: other.in_flight[pb.pp - 1] *= 2.0; break;
        case 5: other.mem_limit_bytes = pb.mem_limit_bytes * 2; break;
        default: other.allowed_recompute = 1u << PX_RECOMPUTE_FULL; break;
        }
        char what[32];
        snprintf(what, sizeof what, "field %d changed", field);
        check_optimal(what, &other, &o, &changed);
        CHECK_MSG(!same_answer(&first, &changed, pb.n_layers),
                  "%s: the base problem's answer (or the case does not move the optimum)",
                  what);
    }
    /* and the base problem still gets its own answer after the others */
    int hits = px_partition_memo_hits(memo);
    CHECK(px_partition_solve(&pb, &o, &again, &err) == PX_OK);
    CHECK(same_answer(&first, &again, pb.n_layers));
    CHECK(px_partition_memo_hits(memo) == hits + 1);
    /* under a work limit another time limit (the clock only a backstop) is
     * the same question; without one it is another */
    px_partition_opts clock = o;
    clock.time_limit_s = 60.0;
    CHECK(px_partition_solve(&pb, &clock, &again, &err) == PX_OK);
    CHECK(same_answer(&first, &again, pb.n_layers));
    CHECK_MSG(px_partition_memo_hits(memo) == hits + 2, "another backstop: %d answers",
              px_partition_memo_hits(memo));
    clock.work_limit = o.work_limit = 0.0;
    CHECK(px_partition_solve(&pb, &o, &again, &err) == PX_OK);
    CHECK(px_partition_solve(&pb, &clock, &again, &err) == PX_OK);
    CHECK(same_answer(&first, &again, pb.n_layers));
    CHECK_MSG(px_partition_memo_hits(memo) == hits + 2,
              "another time limit without a work limit: %d answers",
              px_partition_memo_hits(memo));
    px_partition_memo_free(memo);
    px_partition_memo_free(other_memo);
    return px_test_result("partition_memo");
}
