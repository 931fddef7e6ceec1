/* SPDX-License-Identifier: Apache-2.0 */
/* model.c: the emulated worker's models and their latency model: each
 * model's tensors as Triton declares them, and the modelled time of one
 * batch-1 request on a slice of a given SM count (calibrated below on
 * NVIDIA's published A100 figures), for a GPU shared by time-slicing too.
 * It knows SM counts, not GPU geometry; nothing here runs anything. */
#include "worker/internal.h"

#include <math.h>
#include <string.h>

/* Calibration (docs/worker.md). BERT-large SQuAD, batch 1: 3.75 ms on a full
 * A100 and 6.38 ms on one 1g.5gb slice, NVIDIA's published A100 MIG figures
 * as issue 5 quotes them (NVIDIA's A100 MIG material; the flower walkthrough
 * this project follows is developer.nvidia.com/blog/minimizing-dl-inference-
 * latency-with-mig/; the figures were not re-checked against it here). We model
 *     t(sms) = t_full * (full_sms / sms) ^ ALPHA
 * with ALPHA = ln(6.38 / 3.75) / ln(108 / 14) = 0.2601 (the A100 has 108 SMs,
 * a 1g.5gb slice 14): batch-1 inference does not fill the big GPU, so a
 * seventh of it is far less than 7x slower.
 * ResNet-50 (flower), batch 1: no published per-slice latency in our
 * references, so t_full is BERT-large's scaled by the MLPerf Inference v1.0
 * per-sample cost on one 1g.10gb slice (NVIDIA's closed submission: 502.5
 * BERT samples/s vs 5,171 ResNet-50 samples/s; reference/scheduling-anchors.md
 * §5c): 3.75 ms * 502.5 / 5171 = 0.364 ms, with the same ALPHA (the MISO logs
 * there, §5b, give ResNet-50 1.72x slower on 1g.5gb, BERT's 1.70x). */
#define GS_WORKER_ALPHA (log(6.38 / 3.75) / log(108.0 / 14.0))
/* Time-slicing without MIG (--share N): every sharer is assumed busy, so a
 * request waits for the N-1 others' turns, each costing one context switch
 * of CTX_SWITCH_US (an assumption: no measured figure in our references). */
#define CTX_SWITCH_US 100.0

const struct gs__model_spec gs__worker_models[GS__WORKER_NMODELS] = {
    {"flower", "ResNet-50 flower classifier (102 classes)", 3.75 * 502.5 / 5171.0, 1, 1,
     {{"input", "FP32", 4, {1, 3, 224, 224}}},
     {{"output", "FP32", 2, {1, 102}}}},
    {"bert-large", "BERT-large question answering (SQuAD v1.1, sequence 384)", 3.75, 3, 2,
     {{"input_ids", "INT32", 2, {1, 384}},
      {"attention_mask", "INT32", 2, {1, 384}},
      {"token_type_ids", "INT32", 2, {1, 384}}},
     {{"start_logits", "FP32", 2, {1, 384}}, {"end_logits", "FP32", 2, {1, 384}}}},
};

static const char *const model_names[] = {"flower", "bert-large", NULL};

const char *const *gs_worker_model_names(void)
{
  return model_names;
}

const struct gs__model_spec *gs__worker_model_find(const char *name, size_t len, unsigned *idx)
{
  for (unsigned i = 0; i < GS__WORKER_NMODELS; i++)
    if (strlen(gs__worker_models[i].name) == len &&
        strncmp(gs__worker_models[i].name, name, len) == 0) {
      if (idx)
        *idx = i;
      return &gs__worker_models[i];
    }
  return NULL;
}

int gs_worker_model_time_us(struct gs_err *err, const char *model, unsigned sms, unsigned full_sms,
                            unsigned share, uint64_t *us)
{
  const struct gs__model_spec *m = gs__worker_model_find(model, strlen(model), NULL);
  double t;
  if (!m)
    return gs_err_set(err, GS_E_NOT_FOUND, "unknown model '%s' (emulated models: flower, bert-large)",
                      model);
  if (!sms || !full_sms || !share)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "SM counts and --share must be positive");
  t = m->full_ms * 1000.0 * pow((double)full_sms / sms, GS_WORKER_ALPHA);
  t = t * share + (share - 1) * CTX_SWITCH_US;
  *us = (uint64_t)llround(t);
  return 0;
}
