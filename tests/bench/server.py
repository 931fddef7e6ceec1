# SPDX-License-Identifier: Apache-2.0
# server.py PORTFILE: the bench tests' target, an HTTP/1.1 keep-alive server
# whose service times and failures are known: /fixed (20 ms), /bimodal
# (every 5th request 50 ms, the others 5 ms), /stall (never answers), /close
# (closes mid-body), /error (500), /notfound (404), /garbage (not HTTP), a
# KServe model "tiny" (INT32 [-1,4], also as version 1) with Triton-style
# /metrics (and two GPUs' nv_gpu_* gauges), "nostats" (served, absent from
# /metrics), /slowing (each answer 3 ms slower than the one before), /stats
# (what was asked: infer paths, X-Bench headers seen), /arrivals (answered
# at once, its arrival time kept; /arrivals-report lists them), and broken
# metadata for models "broken" and "nojson". Writes its port to PORTFILE.
import http.server, json, socket, sys, threading, time

lock = threading.Lock()
count = {"bimodal": 0, "tiny": 0, "slowing": 0, "scrapes": 0, "x_bench": 0}
paths = {}
arrivals = []  # when each /arrivals request came (time.monotonic())

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Head and body leave in two writes: with Nagle on, the body waits for the
    # client's delayed ACK (up to 40 ms), which would blur the known times.
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def send(self, code, body=b"ok", ctype="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def raw(self, data):
        self.wfile.write(data)
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def do_GET(self):
        self.route()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.route()

    def route(self):
        p = self.path
        with lock:
            paths[p] = paths.get(p, 0) + 1
            if self.headers.get("X-Bench") == "yes":
                count["x_bench"] += 1
        if p == "/fixed":
            time.sleep(0.02)
            self.send(200)
        elif p == "/bimodal":
            with lock:
                count["bimodal"] += 1
                slow = count["bimodal"] % 5 == 0
            time.sleep(0.05 if slow else 0.005)
            self.send(200)
        elif p == "/stall":
            time.sleep(3600)
        elif p == "/close":
            self.raw(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part")
        elif p == "/garbage":
            self.raw(b"THIS IS NOT HTTP\r\n\r\n")
        elif p == "/error":
            self.send(500, b'{"error":"boom"}', "application/json")
        elif p == "/notfound":
            self.send(404, b'{"error":"no"}', "application/json")
        elif p == "/slowing":
            with lock:
                count["slowing"] += 1
                n = count["slowing"]
            time.sleep(0.003 * n)
            self.send(200)
        elif p == "/arrivals":
            with lock:
                arrivals.append(time.monotonic())
            self.send(200)
        elif p == "/arrivals-report":
            with lock:
                body = json.dumps(arrivals)
            self.send(200, body.encode(), "application/json")
        elif p == "/stats":
            with lock:
                body = json.dumps({"paths": paths, "x_bench": count["x_bench"]})
            self.send(200, body.encode(), "application/json")
        elif p in ("/v2/models/tiny", "/v2/models/tiny/versions/1", "/v2/models/nostats"):
            self.send(200, json.dumps({"name": p.split("/")[3], "versions": ["1"], "inputs": [
                {"name": "x", "datatype": "INT32", "shape": [-1, 4]}]}).encode())
        elif p in ("/v2/models/tiny/infer", "/v2/models/tiny/versions/1/infer",
                   "/v2/models/nostats/infer"):
            with lock:
                count["tiny"] += "tiny" in p
            time.sleep(0.002)
            self.send(200, b'{"model_name":"tiny","outputs":[]}', "application/json")
        elif p == "/metrics":
            with lock:
                n = count["tiny"]
                count["scrapes"] += 1
                k = count["scrapes"]
            text = ("nv_inference_request_success{model=\"tiny\",version=\"1\"} %d\n"
                    "nv_inference_queue_duration_us{model=\"tiny\",version=\"1\"} %d\n"
                    "nv_inference_compute_infer_duration_us{model=\"tiny\",version=\"1\"} %d\n"
                    % (n, 100 * n, 1000 * n))
            # GPU gauges as Triton labels them; memory used grows with each scrape
            for uuid, util, watts in (("GPU-b", 0.25, 200), ("GPU-a", 0.5, 100)):
                text += ("nv_gpu_utilization{gpu_uuid=\"%s\"} %g\n"
                         "nv_gpu_power_usage{gpu_uuid=\"%s\"} %g\n"
                         "nv_gpu_memory_used_bytes{gpu_uuid=\"%s\"} %d\n"
                         "nv_gpu_memory_total_bytes{gpu_uuid=\"%s\"} %d\n"
                         % (uuid, util, uuid, watts, uuid, 1000 * k, uuid, 40000000000))
            self.send(200, text.encode())
        elif p == "/v2/models/broken":
            self.send(200, b'{"name": "broken", "inputs": [{"name": 3}]}')
        elif p == "/v2/models/nojson":
            self.send(200, b"<html>not json</html>")
        else:
            self.send(404, b'{"error":"unknown"}')

class S(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        pass  # clients that hang up are part of the tests

srv = S(("127.0.0.1", 0), H)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
srv.serve_forever()
