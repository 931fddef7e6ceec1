# SPDX-License-Identifier: Apache-2.0
"""gstest.py: helpers the Python parts of the bash tests share (counted
checks, polling, process liveness and memory from /proc, the "<what>
127.0.0.1:PORT" start-up lines). Standard library only, so it runs under any python3,
including Debian's /usr/bin/python3 that test-grpc.sh needs for grpcio."""
import http.client
import queue
import re
import subprocess
import sys
import time

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok:", name)
    else:
        failed += 1
        print("FAIL:", name, str(detail)[:600])


def finish():
    """Ends the Python part with the line the bash part reads back."""
    print("RESULT %d %d" % (passed, failed))
    sys.exit(0)


def wait_for(pred, secs):
    end = time.time() + secs
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def read(path):
    """The file's text, or "" while it does not exist yet."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def running(pid):
    """Alive and not a zombie; the process may vanish between any two reads
    of /proc, which reads as not running."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def children(pid):
    r = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(x) for x in r.stdout.split()]


def port_of(path, what, secs=15):
    """The port of the "<what> 127.0.0.1:PORT" line a server prints in the
    file at path, waiting up to secs for it; None if it never comes."""
    pat = r"^%s 127\.0\.0\.1:(\d+)" % re.escape(what)
    wait_for(lambda: re.search(pat, read(path), re.M), secs)
    m = re.search(pat, read(path), re.M)
    return int(m.group(1)) if m else None


def serve_port(path, secs=15):
    """The port of gpuslice serve's own "listening on 127.0.0.1:PORT, N
    workers starting" line in the file at path (None if it never comes).
    Workers whose output goes to the same file print "listening on
    127.0.0.1:PORT" too, before or after serve's line: port_of(path,
    "listening on") may name a worker's port."""
    pat = r"^listening on 127\.0\.0\.1:(\d+), \d+ workers"
    wait_for(lambda: re.search(pat, read(path), re.M), secs)
    m = re.search(pat, read(path), re.M)
    return int(m.group(1)) if m else None


def grpc_serve_started(tmp):
    """For a serve started by common.sh's gs_serve_grpc: waits for its two
    workers, checks that it started (else ends the Python part) and returns
    its HTTP and gRPC ports."""
    out = tmp + "/serve.out"
    ok = wait_for(lambda: read(out).count("joined the pool") >= 2, 60)
    port, gport = serve_port(out), port_of(out, "grpc on")
    check("serve starts with 2 workers and both listeners", ok and port and gport,
          read(out) + read(tmp + "/serve.err"))
    if not (ok and port and gport):
        finish()
    return port, gport


def vm_bytes(pid, field):
    """A /proc/PID/status memory field (VmRSS, VmHWM...) in bytes; 0 if gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def check_peak_rss(pid, asan, what, mb=100):
    """Prints process pid's peak RSS (VmHWM) over what came before and
    checks it is under mb MB, unless asan (an AddressSanitizer build)."""
    hwm = vm_bytes(pid, "VmHWM")
    print("serve's peak RSS (VmHWM) %s: %d MB" % (what, hwm >> 20))
    if asan:
        print("(AddressSanitizer build: the %d MB bound is not checked)" % mb)
    else:
        check("serve's peak RSS stays under %d MB" % mb, hwm < mb * 1000 * 1000, hwm)


def http_status(port, path="/", timeout=60):
    """GET path on a new connection to 127.0.0.1:port: the answer's status,
    or the exception's repr when there is none."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        c.close()
        return r.status
    except Exception as e:
        return repr(e)


class Held:
    """A gRPC request iterator (for grpcio's stream calls) that keeps the
    stream open, half-closing it only when told to: put() queues a request,
    end() closes; ended says whether the client has half-closed yet."""
    def __init__(self):
        self.q = queue.Queue()
        self.ended = False

    def put(self, m):
        self.q.put(m)

    def end(self):
        self.q.put(None)

    def __iter__(self):
        return self

    def __next__(self):
        m = self.q.get()
        if m is None:
            self.ended = True
            raise StopIteration
        return m
