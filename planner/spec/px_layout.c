/* px_layout.c — mixed-radix rank arithmetic for the parallel grid. */
#include "px_layout.h"

#include "px_plan_check.h"

#include <stdio.h>
#include <string.h>

static const char *const dim_names[PX_DIM_COUNT] = {"tp", "cp", "pp", "dp", "ep",
                                                    "etp", "edp", "tpcp", "dpcp"};

const char *px_dim_name(px_dim d)
{
    return (d >= 0 && d < PX_DIM_COUNT) ? dim_names[d] : "?";
}

px_status px_layout_init(px_layout *lay, const px_parallel *par, px_error *err)
{
    memset(lay, 0, sizeof *lay);
    int sizes[4] = {par->tp, par->cp, par->pp, par->dp};
    /* sizes >= 1 and ep x etp folded over a stage (px_plan_check.h) */
    px_status st = px_rule_expert_fold(par->tp, par->cp, par->dp, par->ep, par->etp, err);
    if (st != PX_OK)
        return st;
    if (par->pp < 1)
        return PX_FAIL(err, PX_ERR_INVALID, "parallel size pp = %d: must be >= 1", par->pp);

    /* Parse the order string: tokens separated by '-', innermost first. */
    const char *order = par->order[0] ? par->order : "tp-cp-ep-pp-dp";
    int seen[4] = {0, 0, 0, 0};
    int position = 0, stride = 1;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", order);
    for (char *save = NULL, *tok = strtok_r(buf, "-", &save); tok;
         tok = strtok_r(NULL, "-", &save)) {
        if (strcmp(tok, "ep") == 0)
            continue; /* experts are folded inside the stage, see header */
        int d = -1;
        for (int i = 0; i < 4; i++)
            if (strcmp(tok, dim_names[i]) == 0)
                d = i;
        if (d < 0 || seen[d])
            return PX_FAIL(err, PX_ERR_INVALID,
                           "order \"%s\": '%s' is %s; allowed: a permutation of tp, cp, pp, "
                           "dp (and ep), innermost first, e.g. \"tp-cp-ep-pp-dp\"",
                           order, tok, d < 0 ? "not a dimension" : "repeated");
        seen[d] = 1;
        lay->size[d] = sizes[d];
        lay->stride[d] = stride;
        stride *= sizes[d];
        position++;
    }
    if (position != 4)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "order \"%s\": must name each of tp, cp, pp, dp once", order);
    lay->world = stride;

    int dense = par->tp * par->cp * par->dp;
    lay->ep = par->ep;
    lay->etp = par->etp;
    lay->edp = dense / (par->ep * par->etp);
    return PX_OK;
}

int px_layout_coord(const px_layout *lay, int rank, px_dim d)
{
    if (d > PX_DIM_DP)
        return 0;
    return (rank / lay->stride[d]) % lay->size[d];
}

/* Index of rank inside its stage: tp fastest, then cp, then dp. */
static int stage_index(const px_layout *lay, int rank)
{
    int tp = px_layout_coord(lay, rank, PX_DIM_TP);
    int cp = px_layout_coord(lay, rank, PX_DIM_CP);
    int dp = px_layout_coord(lay, rank, PX_DIM_DP);
    return tp + lay->size[PX_DIM_TP] * (cp + lay->size[PX_DIM_CP] * dp);
}

/* Colour: the rank with the coordinates along `mask` dims zeroed. */
static int dense_colour(const px_layout *lay, int rank, const int *dims, int n)
{
    int c = rank;
    for (int i = 0; i < n; i++)
        c -= px_layout_coord(lay, rank, (px_dim)dims[i]) * lay->stride[dims[i]];
    return c;
}

void px_layout_group(const px_layout *lay, int rank, px_dim d, int *colour, int *key)
{
    int tp = lay->size[PX_DIM_TP];
    switch (d) {
    case PX_DIM_TP:
    case PX_DIM_CP:
    case PX_DIM_PP:
    case PX_DIM_DP: {
        int dims[1] = {d};
        *colour = dense_colour(lay, rank, dims, 1);
        *key = px_layout_coord(lay, rank, d);
        return;
    }
    case PX_DIM_TPCP: {
        int dims[2] = {PX_DIM_TP, PX_DIM_CP};
        *colour = dense_colour(lay, rank, dims, 2);
        *key = px_layout_coord(lay, rank, PX_DIM_TP) +
               tp * px_layout_coord(lay, rank, PX_DIM_CP);
        return;
    }
    case PX_DIM_DPCP: {
        int dims[2] = {PX_DIM_CP, PX_DIM_DP};
        *colour = dense_colour(lay, rank, dims, 2);
        *key = px_layout_coord(lay, rank, PX_DIM_CP) +
               lay->size[PX_DIM_CP] * px_layout_coord(lay, rank, PX_DIM_DP);
        return;
    }
    case PX_DIM_EP:
    case PX_DIM_ETP:
    case PX_DIM_EDP: {
        /* Within a stage, index = etp_i + etp * (ep_i + ep * edp_i). */
        int idx = stage_index(lay, rank);
        int etp_i = idx % lay->etp;
        int ep_i = (idx / lay->etp) % lay->ep;
        int edp_i = idx / (lay->etp * lay->ep);
        int stage = px_layout_coord(lay, rank, PX_DIM_PP);
        int per_stage = lay->world / lay->size[PX_DIM_PP];
        int local;
        if (d == PX_DIM_ETP) {
            local = idx - etp_i;
            *key = etp_i;
        } else if (d == PX_DIM_EP) {
            local = idx - ep_i * lay->etp;
            *key = ep_i;
        } else {
            local = idx - edp_i * lay->etp * lay->ep;
            *key = edp_i;
        }
        *colour = stage * per_stage + local;
        return;
    }
    default:
        *colour = 0;
        *key = rank;
    }
}

int px_layout_group_size(const px_layout *lay, px_dim d)
{
    switch (d) {
    case PX_DIM_TP:
    case PX_DIM_CP:
    case PX_DIM_PP:
    case PX_DIM_DP: return lay->size[d];
    case PX_DIM_EP: return lay->ep;
    case PX_DIM_ETP: return lay->etp;
    case PX_DIM_EDP: return lay->edp;
    case PX_DIM_TPCP: return lay->size[PX_DIM_TP] * lay->size[PX_DIM_CP];
    case PX_DIM_DPCP: return lay->size[PX_DIM_DP] * lay->size[PX_DIM_CP];
    default: return 1;
    }
}

/* Rank of the GPU at stage-local index idx (tp fastest, then cp, then dp). */
static int rank_of_stage_index(const px_layout *lay, int stage, int idx)
{
    int tp = lay->size[PX_DIM_TP], cp = lay->size[PX_DIM_CP];
    return stage * lay->stride[PX_DIM_PP] + (idx % tp) * lay->stride[PX_DIM_TP] +
           ((idx / tp) % cp) * lay->stride[PX_DIM_CP] + (idx / (tp * cp)) * lay->stride[PX_DIM_DP];
}

int px_layout_group_member(const px_layout *lay, int rank, px_dim d, int index)
{
    if (index < 0 || index >= px_layout_group_size(lay, d))
        return -1;
    int tp = lay->size[PX_DIM_TP], cp = lay->size[PX_DIM_CP];
    int colour, key;
    px_layout_group(lay, rank, d, &colour, &key);
    switch (d) {
    case PX_DIM_TP:
    case PX_DIM_CP:
    case PX_DIM_PP:
    case PX_DIM_DP: return colour + index * lay->stride[d];
    case PX_DIM_TPCP:
        return colour + (index % tp) * lay->stride[PX_DIM_TP] +
               (index / tp) * lay->stride[PX_DIM_CP];
    case PX_DIM_DPCP:
        return colour + (index % cp) * lay->stride[PX_DIM_CP] +
               (index / cp) * lay->stride[PX_DIM_DP];
    case PX_DIM_EP:
    case PX_DIM_ETP:
    case PX_DIM_EDP: {
        int per_stage = lay->world / lay->size[PX_DIM_PP];
        int stage = colour / per_stage, local = colour % per_stage;
        int step = d == PX_DIM_ETP ? 1 : d == PX_DIM_EP ? lay->etp : lay->etp * lay->ep;
        return rank_of_stage_index(lay, stage, local + index * step);
    }
    default: return -1;
    }
}

int px_layout_nodes_spanned(const px_layout *lay, px_dim d, int gpus_per_node)
{
    if (gpus_per_node < 1)
        gpus_per_node = 1;
    int n = px_layout_group_size(lay, d);
    int worst = 1;
    /* Node boundaries need not align with groups, so look at every group
     * (each is visited once, through its member of key 0). */
    for (int r = 0; r < lay->world; r++) {
        int colour, key;
        px_layout_group(lay, r, d, &colour, &key);
        if (key != 0)
            continue;
        int nodes = 0;
        int first = px_layout_group_member(lay, r, d, 0) / gpus_per_node;
        int lo = first, hi = first;
        for (int i = 0; i < n; i++) {
            int node = px_layout_group_member(lay, r, d, i) / gpus_per_node;
            lo = node < lo ? node : lo;
            hi = node > hi ? node : hi;
        }
        /* Members are evenly strided, so every node between lo and hi that a
         * member falls in counts; count them exactly when the group is small. */
        if (hi == lo) {
            nodes = 1;
        } else {
            nodes = 0;
            int last = -1;
            for (int i = 0; i < n; i++) {
                int node = px_layout_group_member(lay, r, d, i) / gpus_per_node;
                if (node != last)
                    nodes++;
                last = node;
            }
        }
        if (nodes > worst)
            worst = nodes;
    }
    return worst;
}

bool px_layout_crosses_node(const px_layout *lay, px_dim d, int gpus_per_node)
{
    return px_layout_nodes_spanned(lay, d, gpus_per_node) > 1;
}
