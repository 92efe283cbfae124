/* px_export_finetune.c — fine-tuning in the export formats
 * (px_export_finetune.h). */
#include "px_export_finetune.h"

/* Megatron's module names of the LoRA targets, in px_finetune.h bit order
 * (Megatron-Bridge peft/lora.py target_modules). */
static const char *const megatron_modules[PX_LORA_TARGET_COUNT] = {"linear_qkv", "linear_proj",
                                                                   "linear_fc1", "linear_fc2"};

px_status px_export_finetune_check(const px_plan *plan, px_export_target t, px_error *err)
{
    if (!px_finetune_is_lora(&plan->par.finetune))
        return PX_OK;
    const char *why = NULL;
    switch (t) {
    case PX_EXPORT_MEGATRON:
        why = "Megatron-LM's pretrain_gpt.py has no adapter layers; export --to nemo writes "
              "Megatron-Bridge's peft settings";
        break;
    case PX_EXPORT_TORCHTITAN:
        why = "torchtitan's job file has no adapter settings; NeMo AutoModel's and "
              "torchtune's LoRA recipes are configured in their own files";
        break;
    case PX_EXPORT_DEEPSPEED:
        why = "the DeepSpeed config has no adapter settings; DeepSpeed-Chat takes --lora_dim "
              "and --lora_module_name on its command line";
        break;
    default:
        return PX_OK; /* nemo writes peft; slurm's executor is refused by its capabilities */
    }
    return PX_FAIL(err, PX_ERR_UNSUPPORTED, "%s cannot run this plan as exported: LoRA "
                   "fine-tuning (%s)", px_export_target_name(t), why);
}

void px_export_finetune_megatron(const px_plan *plan, px_buf *b)
{
    if (plan->par.finetune.mode == PX_FT_FULL)
        px_buf_puts(b, "--finetune\n");
}

void px_export_finetune_nemo(const px_plan *plan, px_buf *yaml, px_buf *hydra)
{
    const px_finetune *ft = &plan->par.finetune;
    /* full fine-tuning: checkpoint.pretrained_checkpoint (px_export_nemo.c) */
    if (!px_finetune_is_lora(ft))
        return;
    px_buf_puts(yaml, "peft:\n  _target_: megatron.bridge.peft.lora.LoRA\n  target_modules:\n");
    px_buf_puts(hydra, "# hydra: ++peft={_target_:megatron.bridge.peft.lora.LoRA,target_modules:[");
    int n = 0;
    for (int i = 0; i < PX_LORA_TARGET_COUNT; i++)
        if (ft->targets & (1u << i)) {
            px_buf_printf(yaml, "  - %s\n", megatron_modules[i]);
            px_buf_printf(hydra, "%s%s", n++ ? "," : "", megatron_modules[i]);
        }
    px_buf_printf(yaml, "  dim: %d\n  alpha: %g\n", ft->rank, ft->alpha);
    px_buf_printf(hydra, "],dim:%d,alpha:%g}\n", ft->rank, ft->alpha);
}
