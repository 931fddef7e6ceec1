#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_jobs.py OUT_DIR WANT MAP... [--new-on NODE MAP MIN]: the cluster tests'
verdict on what their jobs saw. Each job's output (tests/cluster/test-slurm.sh's
job.sh) names its node, the profile it asked for, its CUDA_VISIBLE_DEVICES, its
steps' and the times it held its slice. MAP files list "node uuid profile" of
every MIG device. Checks: WANT jobs finished; each saw one MIG device of its
profile on its own node, and its steps the same; no (node, UUID) held by two
jobs at overlapping times (and some held by several in turn, or the test
proved nothing). --new-on: at least MIN of MAP's devices on NODE were used.
Prints one summary line, then what is wrong; exits 1 if anything is."""
import glob
import sys


def main(argv):
    out_dir, want = argv[1], int(argv[2])
    maps, new = argv[3:], None
    if "--new-on" in maps:
        i = maps.index("--new-on")
        new, maps = maps[i + 1:i + 4], maps[:i]
    devs = {}
    for f in maps:
        for line in open(f):
            node, uuid, profile = line.split()
            devs[uuid] = (node, profile)
    jobs, bad = {}, []
    for path in sorted(glob.glob(out_dir + "/*.out")):
        job = {"steps": []}
        for line in open(path):
            w = line.split()
            if w[:1] == ["JOB"]:
                job.update(id=w[1], node=w[2], want=w[3], cvd=w[4] if len(w) > 4 else "")
            elif w[:1] == ["STEP"]:
                job["steps"].append(w[3] if len(w) > 3 else "")
            elif w[:1] == ["TIME"]:
                job.update(start=float(w[2]), end=float(w[3]))
        if "end" not in job:
            bad.append("%s: did not finish: %s" % (path, open(path).read()[-300:]))
            continue
        jobs[job["id"]] = job
        if job["cvd"] not in devs:
            bad.append("job %s on %s: CUDA_VISIBLE_DEVICES=%r is no MIG device of the cluster"
                       % (job["id"], job["node"], job["cvd"]))
        elif devs[job["cvd"]] != (job["node"], job["want"]):
            bad.append("job %s on %s asked for %s, got %s" % (job["id"], job["node"], job["want"],
                                                             devs[job["cvd"]]))
        if len(job["steps"]) != 2 or any(s != job["cvd"] for s in job["steps"]):
            bad.append("job %s: its steps saw %s, the job %s" % (job["id"], job["steps"], job["cvd"]))
    if len(jobs) != want:
        bad.append("%d jobs finished, %d submitted" % (len(jobs), want))
    held = {}
    for j in jobs.values():
        held.setdefault((j["node"], j["cvd"]), []).append(j)
    turns = 0
    for key, js in held.items():
        js.sort(key=lambda j: j["start"])
        turns += len(js) > 1
        for a, b in zip(js, js[1:]):
            if b["start"] < a["end"]:
                bad.append("%s: jobs %s and %s held it at once" % (key, a["id"], b["id"]))
    if turns == 0:
        bad.append("no slice served two jobs in turn: the jobs never competed")
    msg = "%d jobs, %d slices used, %d of them by several jobs in turn" % (len(jobs), len(held), turns)
    if new:
        node, fresh, least = new[0], {l.split()[1] for l in open(new[1])}, int(new[2])
        used = {j["cvd"] for j in jobs.values() if j["node"] == node} & fresh
        msg += ", %d of %s's new slices" % (len(used), node)
        if len(used) < least:
            bad.append("%s handed out %d of its new slices, at least %d expected" % (node, len(used), least))
    print(msg)
    for b in bad:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
