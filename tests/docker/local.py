"""A WSGI application served on a loopback port for a test (wsgiref, one thread)."""
import contextlib
import threading
from wsgiref.simple_server import WSGIRequestHandler, make_server


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serving(app):
    """Serve ``app`` on 127.0.0.1 and a free port; yields the port."""
    server = make_server("127.0.0.1", 0, app, handler_class=_Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()
