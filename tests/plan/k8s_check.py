#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""k8s_check.py FILE...: validates `gpuslice plan --export kubernetes` output
as what it is applied to: each document as a Kubernetes object (apiVersion,
kind, metadata.name/namespace/labels rules of the API server), the device
plugin's configs against its config schema, written here field by field from
NVIDIA/k8s-device-plugin api/config/v1 (Config, Flags, PluginCommandLineFlags,
GFDCommandLineFlags, Resources, Sharing, ReplicatedResources,
ReplicatedResource, ReplicatedDevices, Imex) with the plugin's own refusals
(cmd/nvidia-device-plugin validateFlags, internal/plugin/mps.go,
internal/rm/device_map.go), the mig-manager's config.yaml against
nvidia-mig-parted's v1 spec (api/spec/v1/spec.go), and the node labels
against the configs they name. Stricter than the plugin where it would
silently ignore something (an unknown or miscased key): that is an export
bug too. Prints one line per problem; exit 1 if any.
With --expect-error TEXT: the file must be refused with a problem containing
TEXT (the validator's own refusal tests)."""
import re
import sys

import yaml

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
MIG_PROFILE = re.compile(r"^(\d+c\.)?\d+g\.\d+gb(\+me|\+gfx|\+me\.all|-me)?$")
DURATION = re.compile(r"^(infinite|([0-9.]+(ns|us|µs|ms|s|m|h))+)$")

problems = []


def bad(where, what):
    problems.append("%s: %s" % (where, what))


# ---- Kubernetes object shape ----

KINDS = {  # kind: (apiVersion, namespaced, allowed top-level keys)
    "ConfigMap": ("v1", True, {"apiVersion", "kind", "metadata", "data", "binaryData", "immutable"}),
    "Node": ("v1", False, {"apiVersion", "kind", "metadata", "spec", "status"}),
}


def check_labels(where, labels):
    if not isinstance(labels, dict):
        return bad(where, "metadata.labels must be a map")
    for k, v in labels.items():
        prefix, _, name = str(k).rpartition("/")
        if prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix)):
            bad(where, "label key %r: prefix is not a DNS subdomain" % k)
        if len(name) > 63 or not LABEL_NAME.match(name):
            bad(where, "label key %r: name must be 63 characters or less, alphanumerics, '-', '_', '.'" % k)
        if not isinstance(v, str) or len(v) > 63 or (v and not LABEL_NAME.match(v)):
            bad(where, "label %s=%r: a value is a string of at most 63 alphanumerics, '-', '_', '.'" % (k, v))


def check_object(i, doc):
    where = "document %d" % i
    if not isinstance(doc, dict):
        return bad(where, "not a map")
    kind = doc.get("kind")
    if kind not in KINDS:
        return bad(where, "kind %r is none of %s" % (kind, ", ".join(KINDS)))
    api, namespaced, keys = KINDS[kind]
    where = "%s %s" % (kind, (doc.get("metadata") or {}).get("name"))
    if doc.get("apiVersion") != api:
        bad(where, "apiVersion %r, expected %r" % (doc.get("apiVersion"), api))
    for k in doc:
        if k not in keys:
            bad(where, "unknown field %r" % k)
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        return bad(where, "metadata missing")
    for k in meta:
        if k not in ("name", "namespace", "labels", "annotations"):
            bad(where, "metadata.%s is not set by hand" % k)
    name = meta.get("name")
    if not isinstance(name, str) or len(name) > 253 or not DNS_SUBDOMAIN.match(name):
        bad(where, "metadata.name %r is not a DNS-1123 subdomain" % name)
    ns = meta.get("namespace")
    if namespaced and (not isinstance(ns, str) or len(ns) > 63 or not DNS_LABEL.match(ns)):
        bad(where, "metadata.namespace %r is not a DNS-1123 label" % ns)
    if not namespaced and ns is not None:
        bad(where, "a %s is cluster-scoped: no metadata.namespace" % kind)
    if "labels" in meta:
        check_labels(where, meta["labels"])
    if kind == "ConfigMap":
        data = doc.get("data", {})
        if not isinstance(data, dict):
            return bad(where, "data must be a map of strings")
        for k, v in data.items():
            if not isinstance(k, str) or len(k) > 253 or not CONFIGMAP_KEY.match(k):
                bad(where, "data key %r: only alphanumerics, '-', '_', '.'" % k)
            if not isinstance(v, str):
                bad(where, "data.%s must be a string" % k)
        if sum(len(k) + len(str(v)) for k, v in data.items()) > 1 << 20:
            bad(where, "larger than a ConfigMap may be (1 MiB)")


# ---- the device plugin's config (api/config/v1) ----

def of(pred):
    """A field check from a value test."""
    return lambda where, v: pred(v)


def is_bool(v):
    return isinstance(v, bool)


def is_str(v):
    return isinstance(v, str)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def resource_name(where, v):
    """ResourceName.UnmarshalJSON: nvidia.com/ added, 63 at most, DNS subdomain after the prefix."""
    if not is_str(v):
        return bad(where, "a resource name is a string") or ""
    full = v if v.startswith("nvidia.com/") else "nvidia.com/" + v
    name = full.split("/", 1)[1]
    if len(full) > 63:
        bad(where, "fully-qualified resource name must be 63 characters or less: %s" % full)
    if len(name) > 253 or not DNS_SUBDOMAIN.match(name):
        bad(where, "incorrect format for resource name %r" % full)
    return full


def devices(where, v):
    """ReplicatedDevices: "all", a count > 0, or a list of GPU/MIG indices or UUIDs."""
    if v == "all" or (is_int(v) and v > 0):
        return
    if isinstance(v, list) and all((is_int(x) and x >= 0) or (is_str(x) and re.match(
            r"^(\d+|\d+:\d+|GPU-[0-9a-f-]{36}|MIG-[0-9a-f-]{36}|MIG-GPU-[0-9a-f-]{36}/\d+/\d+)$", x)) for x in v):
        return
    bad(where, "devices %r: 'all', a count > 0 or a list of indices and UUIDs" % (v,))


def struct(where, v, fields, required=()):
    """A Go struct: known fields with their checks; the plugin ignores others (so do not write them)."""
    if not isinstance(v, dict):
        return bad(where, "expected a map, found %r" % (v,))
    for k, val in v.items():
        if k not in fields:
            bad(where, "unknown field %r (the plugin would ignore it; fields: %s)" % (k, ", ".join(fields)))
        elif not fields[k](where + "." + k, val):
            bad(where + "." + k, "wrong type or value: %r" % (val,))
    for k in required:
        if k not in v:
            bad(where, "missing %r" % k)


def replicated_resource(where, v):
    struct(where, v, {"name": lambda w, x: bool(resource_name(w, x)), "rename": lambda w, x: bool(resource_name(w, x)),
                      "devices": lambda w, x: devices(w, x) or True, "replicas": lambda w, x: is_int(x)},
           required=("name", "replicas"))
    if isinstance(v, dict) and is_int(v.get("replicas")) and v["replicas"] < 2:
        bad(where, "number of replicas must be >= 2")
    return True


def replicated_resources(where, v):
    struct(where, v, {"renameByDefault": lambda w, x: is_bool(x), "failRequestsGreaterThanOne": lambda w, x: is_bool(x),
                      "resources": lambda w, x: isinstance(x, list) and all(replicated_resource("%s[%d]" % (w, i), r)
                                                                                for i, r in enumerate(x))})
    if isinstance(v, dict):
        if not v.get("resources"):
            bad(where, "no resources specified")
        # DisableResourceNamingInConfig: renames and device lists are dropped.
        for i, r in enumerate(v.get("resources") or []):
            if isinstance(r, dict):
                want = "" if not v.get("renameByDefault") else resource_name(where, r.get("name", "")) + ".shared"
                if r.get("rename", want) != want:
                    bad("%s.resources[%d]" % (where, i), "the plugin ignores 'rename' in the config")
                if r.get("devices", "all") != "all":
                    bad("%s.resources[%d]" % (where, i), "the plugin ignores 'devices' other than all in the config")
    return True


FLAG_FIELDS = {
    "migStrategy": of(is_str), "failOnInitError": of(is_bool), "mpsRoot": of(is_str), "nvidiaDriverRoot": of(is_str),
    "nvidiaDevRoot": of(is_str), "gdrcopyEnabled": of(is_bool), "gdsEnabled": of(is_bool), "mofedEnabled": of(is_bool),
    "useNodeFeatureAPI": of(is_bool), "deviceDiscoveryStrategy": of(is_str),
    "plugin": lambda w, x: struct(w, x, {
        "passDeviceSpecs": lambda w, x: is_bool(x),
        "deviceListStrategy": lambda w, x: is_str(x) or (isinstance(x, list) and all(map(is_str, x))),
        "deviceIDStrategy": lambda w, x: is_str(x), "cdiAnnotationPrefix": lambda w, x: is_str(x),
        "nvidiaCTKPath": lambda w, x: is_str(x), "containerDriverRoot": lambda w, x: is_str(x),
        "sharedDevicesAllocationPolicy": lambda w, x: is_str(x)}) or True,
    "gfd": lambda w, x: struct(w, x, {
        "oneshot": lambda w, x: is_bool(x), "noTimestamp": lambda w, x: is_bool(x),
        "sleepInterval": lambda w, x: is_int(x) or (is_str(x) and bool(DURATION.match(x))),
        "outputFile": lambda w, x: is_str(x), "machineTypeFile": lambda w, x: is_str(x)}) or True,
}


def replicated(rr):
    return isinstance(rr, dict) and any(isinstance(r, dict) and is_int(r.get("replicas")) and r["replicas"] > 1
                                        for r in rr.get("resources") or [])


def plugin_config(where, text):
    """One config as the plugin loads it (parseConfigFrom), then validateFlags and the MIG/MPS rules."""
    try:
        c = yaml.safe_load(text)
    except yaml.YAMLError as e:
        return bad(where, "unmarshal error: %s" % e)
    if not isinstance(c, dict):
        return bad(where, "a config is a map")
    flags = c.get("flags") or {}
    struct(where, c, {
        "version": lambda w, x: x == "v1",
        "flags": lambda w, x: struct(w, x, FLAG_FIELDS) or True,
        "resources": lambda w, x: struct(w, x, {k: lambda w, x: isinstance(x, list) and all(
            struct("%s[%d]" % (w, i), r, {"pattern": lambda w, x: is_str(x), "name": lambda w, x: bool(resource_name(w, x))},
                   ("pattern", "name")) or True for i, r in enumerate(x)) for k in ("gpus", "mig")}) or True,
        "sharing": lambda w, x: struct(w, x, {"timeSlicing": lambda w, x: replicated_resources(w, x),
                                              "mps": lambda w, x: replicated_resources(w, x)}) or True,
        "imex": lambda w, x: struct(w, x, {"channelIDs": lambda w, x: x in ([], [0]),
                                           "required": lambda w, x: is_bool(x)}) or True,
    })
    strategy = flags.get("migStrategy", "none") if isinstance(flags, dict) else "none"
    if strategy not in ("none", "single", "mixed"):
        bad(where, "unknown MIG strategy: %s" % strategy)
    for key, allowed in (("deviceDiscoveryStrategy", ("auto", "nvml", "tegra")),):
        if isinstance(flags, dict) and key in flags and flags[key] not in allowed:
            bad(where, "invalid --device-discovery-strategy option %s" % flags[key])
    sharing = c.get("sharing") or {}
    mps, ts = sharing.get("mps"), sharing.get("timeSlicing")
    if replicated(mps):
        if strategy == "mixed":
            bad(where, "using --mig-strategy=mixed is not supported with MPS")
        if strategy == "single":
            bad(where, "sharing using MPS is not supported for MIG devices (mig-strategy single makes every device one)")
        if not (isinstance(flags, dict) and flags.get("mpsRoot")):
            bad(where, "using MPS requires --mps-root to be specified")
        if replicated(ts):
            bad(where, "timeSlicing and mps both set: the plugin uses MPS only")
        for r in mps.get("resources") or []:
            if isinstance(r, dict) and resource_name(where, r.get("name", "")) != "nvidia.com/gpu":
                bad(where, "MPS shares full GPUs only (nvidia.com/gpu), not %s" % r.get("name"))
    for r in (ts or {}).get("resources") or [] if isinstance(ts, dict) else []:
        name = resource_name(where, r.get("name", "")) if isinstance(r, dict) else ""
        if name != "nvidia.com/gpu" and not (strategy == "mixed" and name.startswith("nvidia.com/mig-")):
            bad(where, "time-slicing %s: no such resource under mig-strategy %s" % (name, strategy))
    return c


# ---- the mig-manager's config.yaml (mig-parted api/spec/v1) ----

def mig_parted(where, text):
    try:
        s = yaml.safe_load(text)
    except yaml.YAMLError as e:
        return bad(where, "unmarshal error: %s" % e) or {}
    if not isinstance(s, dict) or s.get("version") != "v1":
        return bad(where, "unknown version: %r" % (s.get("version") if isinstance(s, dict) else s)) or {}
    for k in s:
        if k not in ("version", "mig-configs"):
            bad(where, "unexpected field: %s" % k)
    configs = s.get("mig-configs")
    if not isinstance(configs, dict) or not configs:
        return bad(where, "at least one entry in 'mig-configs' is required") or {}
    for name, entries in configs.items():
        w = "%s mig-configs.%s" % (where, name)
        if not isinstance(entries, list) or not entries:
            bad(w, "at least one entry in '%s' is required" % name)
            continue
        for i, e in enumerate(entries):
            we = "%s[%d]" % (w, i)
            if not isinstance(e, dict):
                bad(we, "an entry is a map")
                continue
            for k in e:
                if k not in ("device-filter", "devices", "mig-enabled", "mig-devices"):
                    bad(we, "unexpected field: %s" % k)
            for k in ("devices", "mig-enabled"):
                if k not in e:
                    bad(we, "missing required field: %s" % k)
            d = e.get("devices")
            if not (d == "all" or (isinstance(d, list) and all(is_int(x) for x in d))):
                bad(we, "devices %r: 'all' or a list of GPU indices" % (d,))
            if not is_bool(e.get("mig-enabled")):
                bad(we, "mig-enabled must be true or false")
            md = e.get("mig-devices")
            if e.get("mig-enabled") is True and md is None:
                bad(we, "missing required field 'mig-devices' when 'mig-enabled' is true")
            if e.get("mig-enabled") is False and md:
                bad(we, "MIG devices included when 'mig-enabled' is false")
            if md is not None and not (isinstance(md, dict) and all(
                    is_str(k) and MIG_PROFILE.match(k) and is_int(v) and v >= 0 for k, v in md.items())):
                bad(we, "mig-devices %r: profile names to counts" % (md,))
            elif md and not any(md.values()):
                bad(we, "all counts for all MigProfiles are 0")
    return configs


# ---- the whole file ----

def check(text):
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    for i, d in enumerate(docs):
        check_object(i, d)
    maps = {d["metadata"]["name"]: d for d in docs if isinstance(d, dict) and d.get("kind") == "ConfigMap"}
    nodes = [d for d in docs if isinstance(d, dict) and d.get("kind") == "Node"]
    if not nodes:
        bad("file", "no Node: nothing selects the configs")
    plugin = {n["metadata"]["labels"].get("nvidia.com/device-plugin.config") for n in nodes
              if isinstance(n.get("metadata", {}).get("labels"), dict)}
    dp = [m for m in maps.values() if set((m.get("data") or {})) & plugin]
    mp = [m for m in maps.values() if "config.yaml" in (m.get("data") or {})]
    if len(dp) != 1 or len(mp) != 1:
        return bad("file", "expected one device-plugin ConfigMap and one mig-manager ConfigMap, found %d and %d"
                   % (len(dp), len(mp)))
    configs = {k: plugin_config("device-plugin config %s" % k, v) for k, v in dp[0]["data"].items()}
    migc = mig_parted("mig-manager config.yaml", mp[0]["data"]["config.yaml"])
    for n in nodes:
        labels = n["metadata"].get("labels") or {}
        where = "Node %s" % n["metadata"]["name"]
        dpc, mc = labels.get("nvidia.com/device-plugin.config"), labels.get("nvidia.com/mig.config")
        if dpc not in configs:
            bad(where, "nvidia.com/device-plugin.config=%s names no config of %s" % (dpc, dp[0]["metadata"]["name"]))
            continue
        if mc not in migc:
            bad(where, "nvidia.com/mig.config=%s names no mig-configs entry" % mc)
            continue
        # The plugin's MIG strategy must match the layout the mig-manager makes.
        entries = migc[mc] if isinstance(migc[mc], list) else []
        mig = [e for e in entries if isinstance(e, dict) and e.get("mig-enabled") is True]
        strategy = ((configs[dpc] or {}).get("flags") or {}).get("migStrategy", "none")
        profiles = {p for e in mig for p, c in (e.get("mig-devices") or {}).items() if c}
        if mig and strategy == "none":
            bad(where, "MIG GPUs under mig-strategy none: their MIG devices would not be advertised")
        if not mig and strategy != "none":
            bad(where, "mig-strategy %s on a node without MIG" % strategy)
        if strategy == "single" and (len(mig) != len(entries) or len(profiles) != 1):
            bad(where, "mig-strategy single needs every GPU in MIG mode with one profile; has %s" % sorted(profiles))
        if mig and replicated(((configs[dpc] or {}).get("sharing") or {}).get("mps")):
            bad(where, "MPS on a node with MIG GPUs: the device plugin refuses it")


def main():
    args = sys.argv[1:]
    expect = None
    if args[:1] == ["--expect-error"]:
        expect, args = args[1], args[2:]
    for path in args:
        with open(path) as f:
            check(f.read())
    if expect is not None:
        hit = [p for p in problems if expect in p]
        if not hit:
            print("NOT REFUSED (wanted %r): %s" % (expect, problems or "no problem found"))
            return 1
        return 0
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
