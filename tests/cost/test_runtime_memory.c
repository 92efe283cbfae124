/* test_runtime_memory.c — what the runtime takes beside the tensors
 * (px_cost_runtime.h) and the framework rules of torchtitan's memory:
 * the parts sum to the total a plan must fit, the allocator's cache is in
 * the reserved peak only, one NCCL communicator a parallel group of more
 * than one rank, nothing without a framework profile; the op-level
 * selective policy keeps what its save list names; the eager loss's fp32
 * copies, the FSDP head kept gathered, a pipeline stage's unsharded
 * layers and torch.distributed.pipelining's receive buffers change the
 * buffers by their closed forms. */
#include <math.h>
#include <string.h>

#include "px_cost.h"
#include "px_cost_runtime.h"
#include "px_framework.h"
#include "px_test.h"

static px_model model;
static px_hw hw;
static px_framework fw;
static px_cost_ctx ctx;

static void layout(px_parallel *par, int tp, int pp, int dp)
{
    px_parallel_init(par);
    par->tp = tp;
    par->pp = pp;
    par->dp = dp;
    par->sp = tp > 1;
    par->micro_batch = 1;
    par->n_micro = 8;
    par->seq_len = 8192;
    par->recompute = PX_RECOMPUTE_SELECTIVE;
}

static void runtime_parts(void)
{
    px_error err;
    CHECK(px_framework_load("megatron", NULL, &fw, &err) == PX_OK);
    ctx.run = &fw.run;
    px_parallel par;
    layout(&par, 2, 2, 2);
    par.zero = 1;
    px_memory m;
    px_cost_memory(&ctx, &par, &m, NULL);
    CHECK(m.allocated == m.weights + m.grads + m.optimizer + m.activations + m.buffers);
    CHECK(m.nccl_comms == 3); /* TP, the pipeline, DP */
    CHECK(m.nccl == 3 * hw.nccl_comm_bytes && hw.nccl_comm_bytes == 688000000);
    CHECK(m.runtime_context == hw.runtime_context_bytes && m.runtime_context > 0);
    CHECK(m.workspace == fw.run.workspace_bytes && m.workspace > 0);
    CHECK(m.total == m.allocated + m.workspace + m.runtime_context + m.nccl);
    /* reserved = in use / (1 - f): the cache, not in what must fit */
    double f = fw.run.allocator_cache_fraction, in_use = (double)(m.allocated + m.workspace);
    CHECK(f > 0.0);
    CHECK_CLOSE((double)m.allocator_cache, in_use * f / (1.0 - f), 0, 1.0);
    CHECK(px_memory_reserved(&m) == m.allocated + m.workspace + m.allocator_cache);
    /* no framework profile: the tensors alone */
    ctx.run = NULL;
    px_memory bare;
    px_cost_memory(&ctx, &par, &bare, NULL);
    CHECK(bare.total == bare.allocated && bare.nccl == 0 && bare.runtime_context == 0);
    CHECK(bare.allocated == m.allocated); /* megatron's tensors are the default rules' */
}

static void communicators(void)
{
    px_parallel par;
    layout(&par, 1, 1, 1);
    CHECK(px_cost_nccl_comms(&ctx, &par) == 0);
    par.dp = 8;
    CHECK(px_cost_nccl_comms(&ctx, &par) == 1);
    par.shard_group = 4; /* HSDP: the shard group and the replicas' */
    CHECK(px_cost_nccl_comms(&ctx, &par) == 2);
    layout(&par, 2, 2, 2);
    par.cp = 2;
    CHECK(px_cost_nccl_comms(&ctx, &par) == 4);
}

/* Llama 3 8B, micro-batch 2, 8 K: the op-level policy keeps the block's
 * input, wq's and wv's outputs, the attention output and its fp32
 * log-sum-exp, w1's and w2's outputs; with TP also the two
 * reduce-scatters' outputs. */
static void op_policy(void)
{
    px_act_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.s = sh.s_kv = 8192;
    sh.b = 2;
    sh.h = 4096;
    sh.a = 32;
    sh.kv = 8;
    sh.dq = sh.dv = 128;
    sh.f = 14336;
    sh.gated = true;
    sh.elem_bytes = 2;
    sh.tp = 1;
    sh.flash = true;
    sh.recompute = PX_RECOMPUTE_SELECTIVE;
    sh.sac_op = true;
    px_act_ops o, meg;
    px_cost_act_layer(&sh, &o);
    double sb = 8192.0 * 2.0;
    double want = 2.0 * sb * (4096 + 32 * 128 + 8 * 128 + 32 * 128 + 14336 + 4096) + 4.0 * sb * 32;
    CHECK_CLOSE(o.total, want, 1e-12, 0);
    sh.sac_op = false;
    px_cost_act_layer(&sh, &meg);
    CHECK(o.total < 0.5 * meg.total); /* Megatron's selective keeps 36 sbh */
    /* TP 2 with SP */
    sh.sac_op = true;
    sh.tp = 2;
    sh.sp = true;
    px_cost_act_layer(&sh, &o);
    double sbh = sb * 4096;
    want = 2.0 * sbh / 2 + 2.0 * 2.0 * sbh / 2 + 2.0 * sb * (16 * 128 + 4 * 128 + 16 * 128) +
           4.0 * sb * 16 + 2.0 * sb * 14336 / 2 + 2.0 * sbh;
    CHECK_CLOSE(o.total, want, 1e-12, 0);
}

/* FSDP (ZeRO-3) over the data-parallel GPUs, micro-batch 2, full recompute:
 * the layout the torchtitan checks below price their buffers on */
static void fsdp_layout(px_parallel *par, int tp, int pp, int dp)
{
    layout(par, tp, pp, dp);
    par->zero = 3;
    par->micro_batch = 2;
    par->recompute = PX_RECOMPUTE_FULL;
}

/* torchtitan's buffers: each trait moves the worst stage by its closed form */
static void torchtitan_buffers(void)
{
    px_error err;
    CHECK(px_framework_load("torchtitan", NULL, &fw, &err) == PX_OK);
    CHECK(fw.run.loss_logit_bytes == 12 && fw.run.fsdp_head_kept_gathered &&
          fw.run.fsdp_pp_grad_bytes == 2);
    fw.run.loss_chunks = 1; /* the loss whole, so its logits show in full (loss_chunks below) */
    px_fw_runtime base = fw.run;
    ctx.run = &fw.run;
    px_parallel par;
    fsdp_layout(&par, 1, 1, 8);
    px_memory a, b;
    px_cost_memory(&ctx, &par, &a, NULL);
    fw.run.loss_logit_bytes = 0; /* Megatron's: bf16 logits and one fp32 copy */
    px_cost_memory(&ctx, &par, &b, NULL);
    double tok = 8192.0 * 2.0, V = (double)model.vocab;
    CHECK_CLOSE((double)(a.buffers - b.buffers), (12.0 - 6.0) * tok * V, 0, 2.0);
    fw.run = base;
    fw.run.fsdp_head_kept_gathered = false;
    px_cost_memory(&ctx, &par, &b, NULL);
    CHECK_CLOSE((double)(a.buffers - b.buffers), 2.0 * V * (double)model.hidden, 0, 2.0);
    /* a pipeline: the stage's 16 layers gathered (2 bytes) with unsharded
     * gradients at fsdp_pp_grad_bytes */
    fw.run = base;
    layout(&par, 1, 2, 4);
    par.zero = 3;
    par.recompute = PX_RECOMPUTE_FULL;
    px_cost_memory(&ctx, &par, &a, NULL);
    fw.run.fsdp_pp_grad_bytes = 4;
    px_cost_memory(&ctx, &par, &b, NULL);
    double layer = (double)ctx.kind_params[PX_LAYER_DENSE];
    CHECK_CLOSE((double)(b.buffers - a.buffers), 16.0 * layer * 2.0, 1e-6, 0);
    fw.run = base;
    ctx.run = NULL;
}

/* torch.distributed.pipelining's buffers (pp_buffers_per_micro): every
 * stage a receive buffer each way per micro-batch of each chunk; stage 0
 * without activations received but with its outputs in flight kept, the
 * last stage without gradients received and its inputs in flight already
 * counted as its first layer's; against one message each way without it.
 * The partitioner's ends and every-stage terms add up to each stage's. */
static void pipeline_buffers(void)
{
    px_error err;
    CHECK(px_framework_load("torchtitan", NULL, &fw, &err) == PX_OK);
    CHECK(fw.run.pp_buffers_per_micro);
    ctx.run = &fw.run;
    px_parallel par;
    layout(&par, 1, 4, 2); /* 1F1B, 8 micro-batches of 1 */
    par.recompute = PX_RECOMPUTE_FULL;
    double msg = px_cost_pp_msg_bytes(8192.0, 1.0, (double)model.hidden, 1, false, 2);
    px_memory on[4], off[4];
    px_cost_stage_memory(&ctx, &par, on);
    fw.run.pp_buffers_per_micro = false;
    px_cost_stage_memory(&ctx, &par, off);
    /* messages held with the trait less the two without: stage 0 the 8
     * gradient buffers and its 4 outputs in flight, the middle stages both
     * ways, the last stage 8 activation buffers less its 1 in flight */
    double want[4] = {8.0 + 4.0, 16.0, 16.0, 8.0 - 1.0};
    for (int st = 0; st < 4; st++)
        CHECK_MSG(fabs((double)(on[st].buffers - off[st].buffers) - (want[st] - 2.0) * msg) <=
                      2.0,
                  "stage %d: %.0f bytes more, want %.0f", st,
                  (double)(on[st].buffers - off[st].buffers), (want[st] - 2.0) * msg);
    /* the partitioner's terms move as the stages do: every stage's by the
     * middle stages' 14 messages, the ends' by what stage 0 and the last
     * stage hold beside them (12 - 16 and 7 - 16) */
    double f[2], l[2], ev[2];
    px_cost_stage_end_buffers(&ctx, &par, &f[0], &l[0], &ev[0]);
    fw.run.pp_buffers_per_micro = true;
    px_cost_stage_end_buffers(&ctx, &par, &f[1], &l[1], &ev[1]);
    CHECK_CLOSE(ev[1] - ev[0], 14.0 * msg, 1e-9, 0);
    CHECK_CLOSE(f[1] - f[0], (12.0 - 16.0) * msg, 1e-9, 0);
    CHECK_CLOSE(l[1] - l[0], (7.0 - 16.0) * msg, 1e-9, 0);
    /* interleaved, 2 chunks a rank: twice the receive buffers */
    par.schedule = PX_SCHED_INTERLEAVED;
    par.vpp = 2;
    px_cost_stage_memory(&ctx, &par, on);
    fw.run.pp_buffers_per_micro = false;
    px_cost_stage_memory(&ctx, &par, off);
    CHECK_CLOSE((double)(on[1].buffers - off[1].buffers), (32.0 - 2.0) * msg, 0, 2.0);
    fw.run.pp_buffers_per_micro = true;
    ctx.run = NULL;
}

/* torchtitan's releases of 2024 and 2025 ran PyTorch's DTensor loss_parallel
 * under TP: 16 bytes a logit of the vocabulary shard instead of 12, and
 * nothing changes without TP */
static void loss_parallel(void)
{
    px_error err;
    CHECK(px_framework_load_release("torchtitan", NULL, "2024", &fw, &err) == PX_OK);
    CHECK(fw.run.loss_parallel_logit_bytes == 16 && fw.run.loss_logit_bytes == 12);
    ctx.run = &fw.run;
    px_parallel par;
    px_memory a, b;
    double tok = 8192.0 * 2.0, V = (double)model.vocab;
    for (int tp = 1; tp <= 2; tp++) {
        fsdp_layout(&par, tp, 1, 8 / tp);
        px_cost_memory(&ctx, &par, &a, NULL);
        fw.run.loss_parallel_logit_bytes = 0;
        px_cost_memory(&ctx, &par, &b, NULL);
        fw.run.loss_parallel_logit_bytes = 16;
        double want = tp > 1 ? (16.0 - 12.0) * tok * V / tp : 0.0;
        CHECK_CLOSE((double)(a.buffers - b.buffers), want, 0, 2.0);
    }
    ctx.run = NULL;
}

/* torchtitan as it runs today chunks its loss (ChunkedLossWrapper, 8
 * slices): one slice's 12 bytes a logit and the fp32 buffer of the head
 * input's gradient instead of the whole micro-batch's logits.  Its 2024
 * release ran the loss whole. */
static void loss_chunks(void)
{
    px_error err;
    CHECK(px_framework_load_release("torchtitan", NULL, "2024", &fw, &err) == PX_OK);
    CHECK(fw.run.loss_chunks == 1);
    CHECK(px_framework_load("torchtitan", NULL, &fw, &err) == PX_OK);
    CHECK(fw.run.loss_chunks == 8 && fw.run.loss_logit_bytes == 12);
    ctx.run = &fw.run;
    px_parallel par;
    px_memory a, b;
    double tok = 8192.0 * 2.0, V = (double)model.vocab, h = (double)model.hidden;
    fsdp_layout(&par, 1, 1, 8);
    px_cost_memory(&ctx, &par, &a, NULL);
    fw.run.loss_chunks = 1;
    px_cost_memory(&ctx, &par, &b, NULL);
    CHECK_CLOSE((double)(b.buffers - a.buffers), 12.0 * tok * V * (1.0 - 1.0 / 8.0) - 4.0 * tok * h,
                0, 2.0);
    CHECK(a.buffers < b.buffers);
    fw.run.loss_chunks = 8;
    ctx.run = NULL;
}

/* torchao's quantised linears save their bf16 input (quant_keeps_hp_input):
 * fp8-rowwise keeps the bf16 activations whole; without the trait the
 * linear inputs are saved quantised.  Under TP the tensorwise recipe casts
 * before the collective and saves float8 either way. */
static void quant_input_kept(void)
{
    px_error err;
    CHECK(px_framework_load("torchtitan", NULL, &fw, &err) == PX_OK);
    CHECK(fw.run.quant_keeps_hp_input);
    ctx.run = &fw.run;
    px_parallel par;
    px_memory m16, m8, mq;
    fsdp_layout(&par, 1, 1, 8);
    par.recompute = PX_RECOMPUTE_NONE;
    px_cost_memory(&ctx, &par, &m16, NULL);
    par.precision = PX_PREC_FP8_ROWWISE;
    px_cost_memory(&ctx, &par, &m8, NULL);
    CHECK(m8.activations == m16.activations);
    fw.run.quant_keeps_hp_input = false;
    ctx.ops_memo.valid = false; /* the memo assumes one profile per search */
    px_cost_memory(&ctx, &par, &mq, NULL);
    CHECK(mq.activations < m8.activations);
    fw.run.quant_keeps_hp_input = true;
    ctx.ops_memo.valid = false;
    fsdp_layout(&par, 2, 1, 4);
    par.recompute = PX_RECOMPUTE_NONE;
    px_cost_memory(&ctx, &par, &m16, NULL);
    par.precision = PX_PREC_FP8_CS;
    px_cost_memory(&ctx, &par, &m8, NULL);
    CHECK(m8.activations < m16.activations);
    par.precision = PX_PREC_FP8_ROWWISE;
    px_cost_memory(&ctx, &par, &mq, NULL);
    CHECK(mq.activations == m16.activations);
    ctx.run = NULL;
}

int main(void)
{
    px_error err;
    CHECK(px_model_load("llama3-8b", NULL, &model, &err) == PX_OK);
    CHECK(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK);
    CHECK(px_cost_ctx_init(&ctx, &model, &hw, &err) == PX_OK);
    /* capacity as the device reports it: 79.11 GiB of an "80 GB" H100 */
    CHECK_CLOSE((double)px_hw_usable_bytes(&hw), 79.11 * 1073741824.0, 1e-4, 0);
    runtime_parts();
    communicators();
    op_policy();
    torchtitan_buffers();
    pipeline_buffers();
    loss_parallel();
    loss_chunks();
    quant_input_kept();
    return px_test_result("runtime_memory");
}
