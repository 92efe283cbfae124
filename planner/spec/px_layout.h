/* px_layout.h — where each rank sits in the parallel grid, and which ranks form
 * each communication group.  Pure arithmetic (no MPI): the planner uses it to
 * know which groups cross a node, the executors to call MPI_Comm_split /
 * ncclCommSplit with the colour and key it returns.
 *
 * The dense grid is tp x cp x pp x dp, laid out in the order string (innermost,
 * fastest-varying first; default "tp-cp-pp-dp", "ep" is accepted in the string
 * and ignored for the dense grid).  The expert grid folds etp x ep x edp over the
 * tp*cp*dp GPUs of one pipeline stage (edp = tp*cp*dp / (etp*ep)), so the
 * expert groups never cross pipeline stages. */
#ifndef PX_LAYOUT_H
#define PX_LAYOUT_H

#include <stdbool.h>

#include "px_error.h"
#include "px_plan.h"

typedef enum {
    PX_DIM_TP = 0,
    PX_DIM_CP,
    PX_DIM_PP,
    PX_DIM_DP,
    PX_DIM_EP,   /* expert parallel (MoE layers) */
    PX_DIM_ETP,  /* expert tensor parallel */
    PX_DIM_EDP,  /* data parallel of the expert weights */
    PX_DIM_TPCP, /* tp x cp together (attention's context group), */
    PX_DIM_DPCP, /* dp x cp together: dense gradients are reduced over both */
    PX_DIM_COUNT
} px_dim;

const char *px_dim_name(px_dim d);

typedef struct {
    int size[4];      /* tp, cp, pp, dp (indexed by PX_DIM_TP..PX_DIM_DP) */
    int stride[4];    /* rank distance between neighbours along each dim */
    int ep, etp, edp;
    int world;
} px_layout;

/* Builds the layout from a parallel configuration; checks the order string
 * (a permutation of tp, cp, pp, dp with optional ep) and the expert folding. */
px_status px_layout_init(px_layout *lay, const px_parallel *par, px_error *err);

/* Coordinate of rank along a dense dim (0..size-1). */
int px_layout_coord(const px_layout *lay, int rank, px_dim d);

/* Colour and key for splitting the world into the groups of dimension d:
 * ranks with equal colour form one group, ordered by key (the coordinate
 * along d).  Works for every px_dim. */
void px_layout_group(const px_layout *lay, int rank, px_dim d, int *colour, int *key);

/* Size of the groups of dimension d. */
int px_layout_group_size(const px_layout *lay, px_dim d);

/* The world rank of the member with index `index` in rank's group along d. */
int px_layout_group_member(const px_layout *lay, int rank, px_dim d, int index);

/* True when some group of dimension d spans more than one node of
 * gpus_per_node consecutive ranks. */
bool px_layout_crosses_node(const px_layout *lay, px_dim d, int gpus_per_node);

/* Number of distinct nodes one group of dimension d touches (worst group). */
int px_layout_nodes_spanned(const px_layout *lay, px_dim d, int gpus_per_node);

#endif
