"""moto_server with one request at a time.

moto's server is threaded and its DynamoDB backend takes no lock between evaluating a condition and
writing, so two concurrent conditional writes can both succeed (measured: 4 in 30 concurrent lease
acquisitions). DynamoDB itself applies conditional writes atomically, and the ingester's lease, fence
and version guard rely on that. Serialising the WSGI app restores the guarantee; connections are still
accepted on threads, so one client's keep-alive socket never blocks another's.

Usage: python3 moto_serialized.py -H 127.0.0.1 -p PORT   (the same flags as moto_server)
"""

import sys
import threading

try:
    import moto.server as server
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
        with _lock:
            # Consume the response inside the lock: moto builds it while handling the request.
            return list(app(environ, start_response))

    return handle


def _run_simple_serialised(host, port, app, **kwargs):
    return _run_simple(host, port, _serialised(app), **kwargs)


server.run_simple = _run_simple_serialised

if __name__ == "__main__":
    server.main(sys.argv[1:])
