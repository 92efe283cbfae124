/* px_split_megatron.h — uneven pipeline splits the way Megatron-Core makes
 * them (megatron/core/transformer/transformer_block.py,
 * get_num_layers_to_build; megatron/training/arguments.py):
 *   --decoder-first-pipeline-num-layers F, --decoder-last-pipeline-num-layers N:
 *       the first / last pipeline stage hold F / N decoder layers, the other
 *       stages share the rest evenly;
 *   --account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split:
 *       the embedding and the loss count as one layer each of the first and
 *       the last stage, so L + 2 "layers" are split evenly and those two
 *       stages hold one decoder layer fewer (Llama 3.1 405B's 126 layers on
 *       pp 8 x vpp 8: 128 / 64 = 2 a chunk, the first and last chunks 1).
 * With interleaving (v chunks a stage) every stage's layers are divided
 * evenly over its v chunks.  The split is in model order (chunk c = virtual
 * stage c / pp of pipeline stage c % pp), as px_parallel.layers_per_chunk. */
#ifndef PX_SPLIT_MEGATRON_H
#define PX_SPLIT_MEGATRON_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int first_stage_layers;   /* F; 0: not set */
    int last_stage_layers;    /* N; 0: not set */
    bool account_embedding;
    bool account_loss;
    bool allow_empty_ends;    /* the chunk of the embedding / loss slot may hold no
                               * decoder layer (Megatron-Core asserts only >= 0) */
} px_megatron_split;

/* Fills layers_per_chunk[0 .. pp*vpp) for L layers; false when the rule does
 * not apply (a stage's layers do not divide evenly, or a chunk would hold
 * no layer, unless it is the embedding's or the loss's and allow_empty_ends
 * is set). */
bool px_split_megatron(int64_t L, int pp, int vpp, const px_megatron_split *how,
                       int *layers_per_chunk);

/* A custom layout for the layouts the rules above do not split: Megatron-
 * Core's --pipeline-model-parallel-layout (docs/source/user-guide/features/
 * custom_pipeline_model_parallel_layout.md: any number of decoder layers a
 * virtual stage, the embedding "E" first and the loss "L" last, e.g.
 * DeepSeek-V3's 61 layers on pp 16 x vpp 2 as "Et*3|(tt|)*29,m|L"), or
 * torchtitan's module_fqns_per_model_part (any modules per virtual stage).
 * The entries spread as evenly as they go over the pp x vpp chunks in model
 * order, the remainder to the middle ones.  ends_as_entries: the embedding
 * and the loss count as one entry each and the end chunks may hold them
 * alone (Megatron); otherwise the L layers alone and every chunk holds one.
 * False when a chunk would hold too few. */
bool px_split_layout_balanced(int64_t L, int pp, int vpp, bool ends_as_entries,
                              int *layers_per_chunk);

#endif
