"""moto_server with one request at a time, on keep-alive connections.

moto's server is threaded and its DynamoDB backend takes no lock between evaluating a condition and
writing, so two concurrent conditional writes can both succeed (measured: 4 in 30 concurrent lease
acquisitions). DynamoDB itself applies conditional writes atomically, and the ingester's lease, fence
and version guard rely on that. Serialising the WSGI app restores the guarantee; connections are still
accepted on threads, so one client's keep-alive socket never blocks another's.

Werkzeug's development server closes the connection after every response, so each AWS call paid for a
new TCP connection, a server thread and, on the client, a lookup of `localhost`: about 2 ms of CPU per
call on each side, out of about 5 (measured with 400 PutItem calls). Here a connection stays open for
the next request, as on AWS: the response no longer says `Connection: close`, the rest of a request's
body the app left unread is read before the next request (not by Werkzeug's 10 ms wait for more bytes,
which would swallow that request), and responses leave without waiting for Nagle's algorithm.

Usage: python3 moto_serialized.py -H 127.0.0.1 -p PORT   (the same flags as moto_server)
"""

import sys
import threading

try:
    import moto.server as server
    import werkzeug.serving as serving
    from werkzeug.wsgi import LimitedStream
except ImportError as error:
    # Exit status 3 tells tools/local/moto.ts to show this line instead of a traceback.
    print(
        f'moto_server cannot start ({sys.executable}: {error}): '
        'install with pip install "moto[server]" cfn-lint',
        file=sys.stderr,
    )
    sys.exit(3)

_run_simple = server.run_simple
_lock = threading.Lock()


def _serialised(app):
    def handle(environ, start_response):
        body = environ["wsgi.input"]
        if not environ.get("wsgi.input_terminated"):
            # Werkzeug hands over the socket itself: bound it by Content-Length, so it can be read to the end.
            body = environ["wsgi.input"] = LimitedStream(body, int(environ.get("CONTENT_LENGTH") or 0))
        with _lock:
            # Consume the response inside the lock: moto builds it while handling the request.
            response = list(app(environ, start_response))
        while body.read(65536):
            pass
        return response

    return handle


class _KeepAliveHandler(serving.WSGIRequestHandler):
    disable_nagle_algorithm = True

    def send_header(self, keyword, value):
        if keyword.lower() == "connection" and value.lower() == "close":
            return
        super().send_header(keyword, value)


class _NothingToDrain:
    """Werkzeug's wait for unread request bytes after a response, which assumes the connection then closes."""

    EVENT_READ = 1

    class DefaultSelector:
        def register(self, *args):
            pass

        def select(self, timeout=None):
            return []

        def close(self):
            pass


def _run_simple_serialised(host, port, app, **kwargs):
    serving.selectors = _NothingToDrain
    return _run_simple(host, port, _serialised(app), request_handler=_KeepAliveHandler, **kwargs)


server.run_simple = _run_simple_serialised


def _faster_sqs_clock():
    """SQS's clock read as time.time(), the same instant moto computes through two datetimes.

    moto checks every message of a queue for visibility and delay on each receive and count (its own TODO says
    it is inefficient with many messages), reading the clock twice per message: at a depth of a few hundred,
    those reads were 70 % of a ReceiveMessage's CPU, and ReceiveMessage a fifth of moto's in npm test.
    Only moto's SQS models read it so; a moto without the name keeps its own.
    """
    import time

    import moto.sqs.models as sqs_models

    original = getattr(sqs_models, "unix_time_millis", None)
    if original is None:
        return

    def unix_time_millis(dt=None):
        return time.time() * 1000.0 if dt is None else original(dt)

    sqs_models.unix_time_millis = unix_time_millis


_faster_sqs_clock()

if __name__ == "__main__":
    server.main(sys.argv[1:])
