/* SPDX-License-Identifier: Apache-2.0 */
/* k8s.c: a planned fleet as the Kubernetes objects NVIDIA's GPU operator
 * acts on: the device plugin's (and GPU feature discovery's) configs, one
 * per distinct node need, in one ConfigMap with the nvidia.com/
 * device-plugin.config node label that picks each (migStrategy from the
 * node's layouts; timeSlicing or MPS replicas for its shared GPUs); the
 * mig-manager's ConfigMap (config.yaml with one mig-parted config per node)
 * with the nvidia.com/mig.config label; all in one multi-document YAML that
 * `kubectl apply -f` takes. What the device plugin cannot run on one node
 * (MPS beside MIG devices, MPS beside time-slicing) is refused, naming the
 * node. Facts from NVIDIA/k8s-device-plugin (api/config/v1,
 * cmd/nvidia-device-plugin validateFlags, internal/rm, internal/plugin/mps.go)
 * and NVIDIA/gpu-operator. Formats: docs/kubernetes.md. */
#include "plan/internal.h"

#include <stdlib.h>
#include <string.h>

/* A label value (and so a config name) holds at most 63 characters. */
#define LABEL_MAX 63

enum share { SHARE_NONE, SHARE_TIMESLICING, SHARE_MPS };

struct need {
  unsigned a, b;                 /* the node's GPUs */
  const char *strategy;          /* the device plugin's migStrategy */
  enum share share;
  unsigned replicas;
  char name[LABEL_MAX + 1];      /* its device-plugin config name */
};

static const char *share_word(enum share s)
{
  return s == SHARE_MPS ? "mps" : "timeslicing";
}

/* mig-strategy single makes every device of the node one MIG device type:
 * every GPU in MIG mode with at least one instance (the plugin refuses a
 * GPU with none), all of one profile on one model. */
static bool uniform_mig(const struct gs_plan_fleet *f, unsigned a, unsigned b)
{
  const struct gs_geom_gi_profile *p = NULL;
  for (unsigned i = a; i < b; i++) {
    const struct gs_plan_gpu *g = &f->gpu[i];
    if (g->mode != GS_PLAN_MIG || g->layout.n == 0 || g->model != f->gpu[a].model)
      return false;
    for (unsigned s = 0; s < g->layout.n; s++) {
      if (p && g->layout.slot[s].profile != p)
        return false;
      p = g->layout.slot[s].profile;
    }
  }
  return true;
}

/* The plan must change (the workloads or the fleet), so it is bad input. */
static int refuse(struct gs_err *err, const struct gs_plan_fleet *f, unsigned x, unsigned y, const char *why)
{
  return gs_err_set(err, GS_E_INVALID_ARGUMENT,
                    "node %s: GPU %u (%s) and GPU %u (%s): %s; plan those workloads onto separate nodes "
                    "(a node per sharing mode, MPS only where no GPU uses MIG) or give them another `sharing:`",
                    f->gpu[x].node, f->gpu[x].index, gs_plan_mode_name(f->gpu[x].mode), f->gpu[y].index,
                    gs_plan_mode_name(f->gpu[y].mode), why);
}

/* What the node's device plugin must be told, or why no config can say it. */
static int node_need(struct gs_err *err, const struct gs_plan_fleet *f, struct need *n)
{
  int mig = -1, mps = -1, ts = -1;
  for (unsigned i = n->a; i < n->b; i++) {
    const struct gs_plan_gpu *g = &f->gpu[i];
    int *first = g->mode == GS_PLAN_MIG ? &mig : g->mode == GS_PLAN_MPS ? &mps : g->mode == GS_PLAN_TIMESLICE ? &ts : NULL;
    if (first && *first < 0)
      *first = (int)i;
    /* One client needs no sharing; the plugin takes at least 2 replicas. */
    if ((g->mode == GS_PLAN_MPS || g->mode == GS_PLAN_TIMESLICE) && g->nunit > n->replicas)
      n->replicas = g->nunit;
  }
  if (strlen(f->gpu[n->a].node) + 5 > LABEL_MAX)
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "node %s: its name is too long for the nvidia.com/mig.config "
                      "label value plan-<node> (at most %u characters); rename the node in the fleet file",
                      f->gpu[n->a].node, LABEL_MAX);
  if (mps >= 0 && mig >= 0)
    return refuse(err, f, (unsigned)mps, (unsigned)mig, "the NVIDIA device plugin shares no GPU with MPS on a node "
                  "with MIG devices (it refuses MPS with mig-strategy mixed, and MPS for MIG devices)");
  if (mps >= 0 && ts >= 0)
    return refuse(err, f, (unsigned)mps, (unsigned)ts, "the NVIDIA device plugin runs one sharing mode per node "
                  "(MPS takes over when both are set)");
  n->strategy = mig < 0 ? "none" : uniform_mig(f, n->a, n->b) ? "single" : "mixed";
  n->share = n->replicas < 2 ? SHARE_NONE : mps >= 0 ? SHARE_MPS : SHARE_TIMESLICING;
  if (n->share == SHARE_NONE)
    n->replicas = 0;
  if (n->share == SHARE_NONE)
    snprintf(n->name, sizeof(n->name), "mig-%s", n->strategy);
  else
    snprintf(n->name, sizeof(n->name), "mig-%s-%s-%u", n->strategy, share_word(n->share), n->replicas);
  return 0;
}

/* The nodes, each with its need (the caller frees *out). */
static int needs_of(struct gs_err *err, const struct gs_plan_fleet *f, struct need **out, unsigned *count)
{
  struct need *n = calloc(f->ngpu ? f->ngpu : 1, sizeof(*n));
  unsigned k = 0;
  int rc = 0;
  if (!n)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory writing the Kubernetes export");
  for (unsigned a = 0, b; a < f->ngpu && rc == 0; a = b) {
    for (b = a + 1; b < f->ngpu && strcmp(f->gpu[b].node, f->gpu[a].node) == 0; b++)
      ;
    n[k] = (struct need){.a = a, .b = b};
    rc = node_need(err, f, &n[k++]);
  }
  if (rc) {
    free(n);
    return rc;
  }
  *out = n;
  *count = k;
  return 0;
}

/* One device-plugin config, as a block under its ConfigMap key. */
static void plugin_config(FILE *out, const struct need *n)
{
  fprintf(out, "  %s: |\n    version: v1\n    flags:\n      migStrategy: %s\n", n->name, n->strategy);
  if (n->share == SHARE_MPS)
    fprintf(out, "      mpsRoot: /run/nvidia/mps\n");
  if (n->share == SHARE_NONE)
    return;
  /* The plugin shares every full GPU of the node (nvidia.com/gpu) alike:
   * the most clients the plan puts on one of them. Asking for 2 replicas
   * buys no more compute, so a container may ask for one only. */
  fprintf(out, "    sharing:\n      %s:\n        renameByDefault: false\n        failRequestsGreaterThanOne: true\n"
               "        resources:\n        - name: nvidia.com/gpu\n          replicas: %u\n",
          n->share == SHARE_MPS ? "mps" : "timeSlicing", n->replicas);
}

static void device_plugin_map(FILE *out, const struct need *n, unsigned count, const char *ns)
{
  fprintf(out, "---\n# The NVIDIA device plugin's and GPU feature discovery's configs, one per node need; each\n"
               "# node's nvidia.com/device-plugin.config label picks one. ClusterPolicy: devicePlugin.config.name\n"
               "# set to this ConfigMap, and mig.strategy left empty so that each config's migStrategy holds.\n"
               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gpuslice-device-plugin-config\n"
               "  namespace: %s\ndata:\n", ns);
  for (unsigned i = 0; i < count; i++) {
    bool seen = false;
    for (unsigned j = 0; j < i && !seen; j++)
      seen = strcmp(n[j].name, n[i].name) == 0;
    if (!seen)
      plugin_config(out, &n[i]);
  }
}

/* The mig-parted file of `--export mig-parted`, as the ConfigMap's config.yaml. */
static int mig_parted_map(struct gs_err *err, FILE *out, const struct gs_plan_fleet *f, const char *ns)
{
  char *text = NULL, *line, *save = NULL;
  size_t size = 0;
  FILE *mem = open_memstream(&text, &size);
  if (!mem)
    return gs_err_set(err, GS_E_NO_MEMORY, "out of memory writing the Kubernetes export");
  gs_plan_export_mig_parted(mem, f);
  fclose(mem);
  fprintf(out, "---\n# The mig-manager's configs: ClusterPolicy migManager.config.name set to this ConfigMap;\n"
               "# each node's nvidia.com/mig.config label picks its own.\n"
               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gpuslice-mig-parted-config\n  namespace: %s\n"
               "data:\n  config.yaml: |\n", ns);
  for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
    fprintf(out, "    %s\n", line);
  free(text);
  return 0;
}

static void node_labels(FILE *out, const struct gs_plan_fleet *f, const struct need *n)
{
  fprintf(out, "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  labels:\n"
               "    nvidia.com/mig.config: plan-%s\n    nvidia.com/device-plugin.config: %s\n",
          f->gpu[n->a].node, f->gpu[n->a].node, n->name);
}

/* Kubernetes names: a DNS-1123 label (a namespace: at most 63 characters)
 * or subdomain (a node: dot-separated labels, at most 253): lower-case
 * letters, digits and '-', starting and ending with a letter or digit. */
static bool dns_name(const char *s, size_t max, bool dots)
{
  size_t len = strlen(s);
  if (len == 0 || len > max)
    return false;
  for (size_t i = 0; i < len; i++) {
    bool alnum = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9');
    bool edge = i == 0 || i + 1 == len || (dots && (s[i - 1] == '.' || s[i + 1] == '.'));
    if (!alnum && (edge || !(s[i] == '-' || (dots && s[i] == '.'))))
      return false;
  }
  return true;
}

static int check_names(struct gs_err *err, const struct gs_plan_fleet *f, const char *ns)
{
  if (!dns_name(ns, 63, false))
    return gs_err_set(err, GS_E_INVALID_ARGUMENT, "namespace '%s' is not a Kubernetes namespace name (lower-case "
                      "letters, digits and '-', at most 63); the GPU operator's is usually gpu-operator", ns);
  for (unsigned i = 0; i < f->ngpu; i++)
    if (!dns_name(f->gpu[i].node, 253, true))
      return gs_err_set(err, GS_E_INVALID_ARGUMENT, "node '%s' is not a Kubernetes node name (lower-case letters, "
                        "digits, '-' and '.'); name the nodes in the fleet file as `kubectl get nodes` does",
                        f->gpu[i].node);
  return 0;
}

int gs_plan_export_k8s(struct gs_err *err, FILE *out, const struct gs_plan_fleet *f, const char *ns,
                       enum gs_plan_k8s_part part)
{
  struct need *n = NULL;
  unsigned count = 0;
  int rc = check_names(err, f, ns);
  if (rc || (rc = needs_of(err, f, &n, &count)) != 0)
    return rc;
  if (part == GS_PLAN_K8S_LABELS)
    for (unsigned i = 0; i < count; i++)
      fprintf(out, "kubectl label node %s nvidia.com/mig.config=plan-%s nvidia.com/device-plugin.config=%s "
                   "--overwrite\n", f->gpu[n[i].a].node, f->gpu[n[i].a].node, n[i].name);
  else {
    if (part == GS_PLAN_K8S_ALL)
      fprintf(out, "# Kubernetes objects from `gpuslice plan` for NVIDIA's GPU operator: `kubectl apply -f`\n"
                   "# this file (docs/kubernetes.md). Nodes are only labelled.\n");
    device_plugin_map(out, n, count, ns);
    if (part == GS_PLAN_K8S_ALL && (rc = mig_parted_map(err, out, f, ns)) == 0)
      for (unsigned i = 0; i < count; i++)
        node_labels(out, f, &n[i]);
  }
  free(n);
  return rc ? rc : ferror(out) ? gs_err_set(err, GS_E_IO, "cannot write the Kubernetes export") : 0;
}
