"""The link between kolo.run's caller and the ranks it starts: the caller serves the pickled function
and takes each rank's pickled result over TCP, so that neither needs a shared directory nor fits in an
environment variable. Every connection starts with the job's token; a connection without it is closed
unread, so nothing from elsewhere is ever unpickled.

One variable carries the service to the ranks: KOLO_RUN_SERVICE="PORT:TOKEN:ADDRESS,ADDRESS,...".
"""
import hmac
import os
import secrets
import socket
import struct
import threading

VARIABLE = "KOLO_RUN_SERVICE"
_GET_FUNCTION = b"F"
_PUT_RESULT = b"R"
_LENGTH = struct.Struct("!Q")


def _send(sock, data):
    sock.sendall(_LENGTH.pack(len(data)) + data)


def _receive_exactly(sock, n):
    chunks = []
    while n > 0:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionError("the connection closed early")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _receive(sock):
    (n,) = _LENGTH.unpack(_receive_exactly(sock, _LENGTH.size))
    return _receive_exactly(sock, n)


def _addresses():
    """This host's addresses, the loopback first (ranks on this host), then the others (ranks elsewhere)."""
    found = ["127.0.0.1"]
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            if info[4][0] not in found:
                found.append(info[4][0])
    except OSError:
        pass
    return found


class Service:
    """Serves `function` (bytes) and collects results: {(attempt, rank): bytes}."""

    def __init__(self, function):
        self._function = function
        self._token = secrets.token_hex(16).encode()
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("0.0.0.0", 0))
        self._server.listen(64)
        self.results = {}
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def environment(self):
        port = self._server.getsockname()[1]
        return {VARIABLE: "%d:%s:%s" % (port, self._token.decode(), ",".join(_addresses()))}

    def _serve(self):
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        with conn:
            try:
                conn.settimeout(30)
                if not hmac.compare_digest(_receive_exactly(conn, len(self._token)), self._token):
                    return
                kind = _receive_exactly(conn, 1)
                if kind == _GET_FUNCTION:
                    _send(conn, self._function)
                elif kind == _PUT_RESULT:
                    attempt, rank = struct.unpack("!qq", _receive_exactly(conn, 16))
                    data = _receive(conn)
                    with self._lock:
                        self.results[(attempt, rank)] = data
                    conn.sendall(b"k")
            except (OSError, ConnectionError, struct.error):
                return

    def close(self):
        self._server.close()


def _connect(service):
    """A connection to the caller, by the first of its addresses that answers, the token sent."""
    port, token, addresses = service.split(":", 2)
    errors = []
    for address in addresses.split(","):
        try:
            sock = socket.create_connection((address, int(port)), timeout=10)
        except OSError as e:
            errors.append("%s: %s" % (address, e))
            continue
        sock.settimeout(None)
        sock.sendall(token.encode())
        return sock
    raise ConnectionError("kolo.run: cannot reach the caller at port %s (%s)" % (port, "; ".join(errors)))


def fetch_function(service=None):
    with _connect(service or os.environ[VARIABLE]) as sock:
        sock.sendall(_GET_FUNCTION)
        return _receive(sock)


def put_result(attempt, rank, data, service=None):
    with _connect(service or os.environ[VARIABLE]) as sock:
        sock.sendall(_PUT_RESULT + struct.pack("!qq", attempt, rank))
        _send(sock, data)
        if _receive_exactly(sock, 1) != b"k":
            raise ConnectionError("kolo.run: the caller did not take rank %d's result" % rank)
