# SPDX-License-Identifier: Apache-2.0
"""h2raw.py: HTTP/2 frames written and read by hand, for tests that must
misbehave on purpose (hold streams open, never finish a message, send no
preface): no HPACK table or Huffman code is used on the way out (literal
fields, never indexed), and on the way in only frame headers, SETTINGS,
WINDOW_UPDATE, RST_STREAM and GOAWAY are read (a HEADERS frame is seen as
an answer, its fields are not decoded). Standard library only."""
import select
import socket
import struct
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
END_STREAM, ACK, END_HEADERS = 1, 1, 4
SETTINGS_MAX_CONCURRENT_STREAMS, SETTINGS_INITIAL_WINDOW_SIZE = 3, 4
SVC = "/inference.GRPCInferenceService/"


def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", sid) + payload


def settings(pairs=()):
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def _hint(n):
    """An HPACK integer with a 7-bit prefix (the string-length form, H=0)."""
    if n < 127:
        return bytes([n])
    out, n = [127], n - 127
    while n >= 128:
        out.append(n % 128 + 128)
        n //= 128
    return bytes(out + [n])


def header_block(fields):
    """Literal header fields without indexing, new names (RFC 7541 §6.2.2)."""
    out = b""
    for k, v in fields:
        k, v = k.encode(), v.encode()
        out += b"\0" + _hint(len(k)) + k + _hint(len(v)) + v
    return out


def grpc_headers(sid, method="ModelInfer", end_stream=False):
    block = header_block([(":method", "POST"), (":scheme", "http"), (":path", SVC + method),
                          (":authority", "x"), ("content-type", "application/grpc"),
                          ("te", "trailers")])
    return frame(HEADERS, END_HEADERS | (END_STREAM if end_stream else 0), sid, block)


def grpc_prefix(n):
    """The 5-byte gRPC message prefix of an uncompressed message of n bytes."""
    return b"\0" + struct.pack(">I", n)


class Conn:
    """One client connection: frames in, parsed frames out, and the send
    window the server granted (connection and per stream)."""

    def __init__(self, port, preface=True):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setblocking(False)
        self.buf = b""
        self.conn_window = 65535
        self.init_window = 65535
        self.windows = {}
        self.server_settings = {}
        self.answered = set()  # streams with a HEADERS frame from the server
        self.reset = {}        # stream -> RST_STREAM error code
        self.goaway = None       # GOAWAY's error code
        self.goaway_last = None  # and the last stream id it says the server took
        self.closed = False
        if preface:
            self.send(PREFACE + settings())

    def send(self, data):
        """Sends what the socket takes now; returns the count."""
        try:
            return self.s.send(data)
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError:
            self.closed = True
            return 0

    def sendall(self, data, secs=5):
        end = time.time() + secs
        while data and time.time() < end and not self.closed:
            n = self.send(data)
            data = data[n:]
            if data:
                select.select([], [self.s], [], 0.05)
        return not data

    def pump(self, secs=0.0):
        """Reads what the server sent (waiting up to secs for the first
        bytes) and applies it; acknowledges SETTINGS."""
        r, _, _ = select.select([self.s], [], [], secs)
        while r:
            try:
                d = self.s.recv(1 << 20)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                d = b""
            if not d:
                self.closed = True
                break
            self.buf += d
            r, _, _ = select.select([self.s], [], [], 0)
        while len(self.buf) >= 9:
            n = struct.unpack(">I", b"\0" + self.buf[:3])[0]
            if len(self.buf) < 9 + n:
                break
            ftype, flags = self.buf[3], self.buf[4]
            sid = struct.unpack(">I", self.buf[5:9])[0] & 0x7fffffff
            payload, self.buf = self.buf[9:9 + n], self.buf[9 + n:]
            self._apply(ftype, flags, sid, payload)

    def _apply(self, ftype, flags, sid, payload):
        if ftype == SETTINGS and not flags & ACK:
            for i in range(0, len(payload), 6):
                k, v = struct.unpack(">HI", payload[i:i + 6])
                self.server_settings[k] = v
                if k == SETTINGS_INITIAL_WINDOW_SIZE:
                    for s in self.windows:
                        self.windows[s] += v - self.init_window
                    self.init_window = v
            self.send(frame(SETTINGS, ACK, 0))
        elif ftype == WINDOW_UPDATE:
            inc = struct.unpack(">I", payload)[0] & 0x7fffffff
            if sid == 0:
                self.conn_window += inc
            else:
                self.windows[sid] = self.windows.get(sid, self.init_window) + inc
        elif ftype == HEADERS:
            self.answered.add(sid)
        elif ftype == RST_STREAM:
            self.reset[sid] = struct.unpack(">I", payload)[0]
        elif ftype == GOAWAY:
            last, self.goaway = struct.unpack(">II", payload[:8])
            self.goaway_last = last & 0x7fffffff
        elif ftype == PING and not flags & ACK:
            self.send(frame(PING, ACK, 0, payload))

    def window(self, sid):
        return min(self.conn_window, self.windows.setdefault(sid, self.init_window))

    def data(self, sid, payload, end=False):
        """Sends payload as DATA frames within the window the server granted
        (16 KiB frames); returns the bytes sent, fewer when the window ran
        out or the socket was full."""
        sent = 0
        while sent < len(payload) and not self.closed and sid not in self.reset:
            n = min(16384, len(payload) - sent, self.window(sid))
            if n <= 0:
                break
            last = end and sent + n == len(payload)
            f = frame(DATA, END_STREAM if last else 0, sid, payload[sent:sent + n])
            if not self.sendall(f, 2):
                break
            self.conn_window -= n
            self.windows[sid] -= n
            sent += n
        return sent

    def close(self):
        self.s.close()
