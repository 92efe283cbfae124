/* Rank layout: colours and keys against hand-worked layouts. */
#include <string.h>

#include "px_layout.h"
#include "px_test.h"

static px_layout make(int tp, int cp, int pp, int dp, int ep, int etp, const char *order)
{
    px_parallel p;
    px_parallel_init(&p);
    p.tp = tp, p.cp = cp, p.pp = pp, p.dp = dp, p.ep = ep, p.etp = etp;
    if (order)
        snprintf(p.order, sizeof p.order, "%s", order);
    px_layout lay;
    px_error err;
    px_status st = px_layout_init(&lay, &p, &err);
    CHECK_MSG(st == PX_OK, "%s", err.msg);
    return lay;
}

static void members(const px_layout *lay, int rank, px_dim d, int *out)
{
    for (int i = 0; i < px_layout_group_size(lay, d); i++)
        out[i] = px_layout_group_member(lay, rank, d, i);
}

int main(void)
{
    /* TP 2 x PP 2 x DP 2, default order: tp stride 1, pp stride 2, dp stride 4. */
    px_layout lay = make(2, 1, 2, 2, 1, 1, NULL);
    CHECK(lay.world == 8);
    int g[8];
    members(&lay, 5, PX_DIM_TP, g);
    CHECK(g[0] == 4 && g[1] == 5);
    members(&lay, 5, PX_DIM_PP, g);
    CHECK(g[0] == 5 && g[1] == 7);
    members(&lay, 5, PX_DIM_DP, g);
    CHECK(g[0] == 1 && g[1] == 5);
    CHECK(px_layout_coord(&lay, 6, PX_DIM_PP) == 1);
    CHECK(px_layout_coord(&lay, 6, PX_DIM_DP) == 1);
    CHECK(px_layout_coord(&lay, 6, PX_DIM_TP) == 0);

    /* Every rank lands in exactly one group per dim, keys 0..n-1. */
    for (int d = 0; d < PX_DIM_COUNT; d++) {
        int n = px_layout_group_size(&lay, (px_dim)d);
        for (int r = 0; r < lay.world; r++) {
            int c, k;
            px_layout_group(&lay, r, (px_dim)d, &c, &k);
            CHECK(k >= 0 && k < n);
            CHECK(px_layout_group_member(&lay, r, (px_dim)d, k) == r);
        }
    }

    /* Order dp-first: dp stride 1. */
    px_layout lay2 = make(2, 1, 1, 4, 1, 1, "dp-tp-pp-cp");
    members(&lay2, 0, PX_DIM_DP, g);
    CHECK(g[0] == 0 && g[1] == 1 && g[2] == 2 && g[3] == 3);
    members(&lay2, 0, PX_DIM_TP, g);
    CHECK(g[0] == 0 && g[1] == 4);

    /* Experts: tp 2, dp 4 (8 GPUs, one stage), ep 4 etp 2: ep groups stride 2. */
    px_layout lay3 = make(2, 1, 1, 4, 4, 2, NULL);
    CHECK(lay3.edp == 1);
    members(&lay3, 3, PX_DIM_EP, g);
    CHECK(g[0] == 1 && g[1] == 3 && g[2] == 5 && g[3] == 7);
    members(&lay3, 3, PX_DIM_ETP, g);
    CHECK(g[0] == 2 && g[1] == 3);

    /* Node crossing: TP 8 in 8-GPU nodes stays inside; DP crosses. */
    px_layout big = make(8, 1, 4, 32, 1, 1, NULL);
    CHECK(!px_layout_crosses_node(&big, PX_DIM_TP, 8));
    CHECK(px_layout_crosses_node(&big, PX_DIM_PP, 8));
    CHECK(px_layout_nodes_spanned(&big, PX_DIM_DP, 8) == 32);
    px_layout t16 = make(16, 1, 1, 4, 1, 1, NULL);
    CHECK(px_layout_nodes_spanned(&t16, PX_DIM_TP, 8) == 2);

    /* Bad order and bad expert folding are errors. */
    px_parallel p;
    px_parallel_init(&p);
    px_error err;
    snprintf(p.order, sizeof p.order, "tp-xx-pp-dp");
    CHECK(px_layout_init(&lay, &p, &err) == PX_ERR_INVALID);
    CHECK(strstr(err.msg, "xx") != NULL);
    px_parallel_init(&p);
    p.dp = 2, p.ep = 4;
    CHECK(px_layout_init(&lay, &p, &err) == PX_ERR_INVALID);

    return px_test_result("test_layout");
}
