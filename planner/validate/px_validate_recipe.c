/* px_validate_recipe.c — what a published benchmark recipe ran that its
 * rows leave out; see px_validate_recipe.h and docs/validation.md. */
#include "px_validate_recipe.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>

/* s contains needle, ignoring case */
static bool has_ci(const char *s, const char *needle)
{
    if (!s || !needle)
        return false;
    for (; *s; s++) {
        size_t i = 0;
        while (needle[i] && s[i] &&
               tolower((unsigned char)s[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (!needle[i])
            return true;
    }
    return false;
}

bool px_val_recipe_is_nemo_dgxc(const char *framework)
{
    return has_ci(framework, "NeMo") && has_ci(framework, "DGX Cloud benchmarking recipe");
}

/* NeMo's performance recipes reduce and accumulate the gradients in bf16:
 * the NeMo 1 configurations of the DGX Cloud recipes set
 * optim.grad_sync_dtype: bf16 (NVIDIA/dgxc-benchmarking v25.02.01:
 * grok1/grok1_314b.yaml, llama3.1/llama3.1_{8b,70b,405b}.yaml,
 * nemo_megatron/gpt3_175b_hydra.yaml, nemotron/nemotron4-340b-synth.yaml),
 * which NeMo maps to Megatron-Core's grad_reduce_in_fp32 = False
 * (nemo/collections/nlp/models/language_modeling/megatron_gpt_model.py) and
 * to the gradient buckets' dtype of its distributed Adam; the NeMo 2
 * performance scripts build every recipe with performance_mode=True, whose
 * pretrain_performance_optimizations set plugins.grad_reduce_in_fp32 =
 * False (nemo/collections/llm/recipes/{llama3_8b,llama3_70b,llama31_405b,
 * gpt3_175b,nemotron4_340b,mixtral_8x7b,...}.py and
 * scripts/performance/llm/pretrain_grok1_314b.py), and
 * scripts/performance/utils.py set_primary_perf_configs sets it False for
 * every FP8 run.  One configuration of v25.02.01 keeps fp32 (Nemotron-4
 * 15B: mcore_distributed_optim without grad_sync_dtype); the rows cannot
 * tell it apart, and its gradients fit and overlap either way. */
int px_val_recipe_grad_fp32(const char *framework)
{
    return px_val_recipe_is_nemo_dgxc(framework) ? 0 : -1;
}

/* The release of a DGX Cloud recipe row as YYMM (v25.02.01 -> 2502) from
 * its source location's "(vYY.MM...)" tag; 0 when there is none. */
static int recipe_release(const char *location)
{
    for (const char *p = location; p && *p; p++) {
        if (p[0] == '(' && p[1] == 'v' && isdigit((unsigned char)p[2]) &&
            isdigit((unsigned char)p[3]) && p[4] == '.' && isdigit((unsigned char)p[5]) &&
            isdigit((unsigned char)p[6]))
            return ((p[2] - '0') * 10 + (p[3] - '0')) * 100 + (p[5] - '0') * 10 + (p[6] - '0');
    }
    return 0;
}

/* The Grok-1 recipe of NVIDIA/dgxc-benchmarking from v25.01 through
 * v25.04.01 launches NeMo with NVTE_FUSED_ATTN=0 (grok1/configure.sh), so
 * Transformer Engine's DotProductAttention takes the container's flash-attn
 * 2 kernels instead of cuDNN's fused attention (and runs its context
 * parallelism with them); v25.05.01 moved to NeMo 2's performance script,
 * which leaves the backend to Transformer Engine.  The other recipes of
 * those releases set NVTE_FUSED_ATTN=1 (llama3.1, nemo_megatron) or choose
 * per model (nemotron). */
int px_val_recipe_flash_version(const char *framework, const char *location)
{
    if (!px_val_recipe_is_nemo_dgxc(framework) || !location)
        return 0;
    int rel = recipe_release(location);
    if (!strncmp(location, "grok1/", 6) && rel >= 2501 && rel < 2505)
        return 2;
    return 0;
}
