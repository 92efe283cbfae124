/* px_router.h — how a mixture-of-experts router turns logits into the k
 * experts of a token and their gates; shared by the CPU kernel and its CUDA
 * twin.
 *
 * Scores s = softmax(logits) over the E experts (Mixtral, Qwen3-MoE) or
 * sigmoid(logits) per expert (DeepSeek-V3).  With n_group > 1 a token first
 * keeps the topk_group groups (E / n_group consecutive experts each) whose
 * two largest scores sum highest, then picks its k experts inside them
 * (DeepSeek-V3's group-limited routing); else among all E.  Picks: the k
 * largest s, ties to the lower index.  Gates: the chosen s, divided by their
 * sum when renorm (norm_topk_prob), times scale (routed_scaling_factor). */
#ifndef PX_ROUTER_H
#define PX_ROUTER_H

/* The most groups of a group-limited router (DeepSeek-V3: 8). */
#define PX_ROUTER_MAX_GROUPS 64

typedef enum { PX_ROUTER_SOFTMAX = 0, PX_ROUTER_SIGMOID = 1 } px_router_score;

typedef struct {
    int score;      /* px_router_score */
    int renorm;     /* gates divided by their sum over the k chosen */
    int n_group;    /* 1: no groups */
    int topk_group; /* groups kept per token (<= n_group) */
    float scale;    /* gates multiplied by it (1: none) */
} px_router;

/* Mixtral's softmax router before renormalisation: the plain top-k. */
static inline px_router px_router_softmax_topk(void)
{
    px_router r = {PX_ROUTER_SOFTMAX, 0, 1, 1, 1.0f};
    return r;
}

#endif
