"""The web view's routes: the grid, a day, a file; GET only, errors as one-line pages."""

from __future__ import annotations

from flask import Flask, Response, render_template, request
from werkzeug.exceptions import HTTPException

from dlpipe.domain.errors import StoreUnavailableError
from dlpipe.domain.feeds import DEFAULT_FEED_NAME
from dlpipe.domain.redaction import redact
from dlpipe.domain.waiting import idle_warning, starving_warning
from dlpipe.log import get_logger
from dlpipe.services.ops.advice import start_day_command
from dlpipe.services.ops.context import OpsContext
from dlpipe.services.ops.errors import UnknownFeedError
from dlpipe.ui import present
from dlpipe.ui.day import day_view, parse_date, parse_files_query
from dlpipe.ui.grid import grid
from dlpipe.ui.job import job_view
from dlpipe.ui.options import BadRequestError, NotFoundPageError, UiOptions, parse_feed

log = get_logger(component="ui")
# Pages only ever load their own script and style sheet: no CDN, no inline script.
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}
# The Host headers answered (answer_only_at): a page whose DNS name rebinds to 127.0.0.1 sends
# its own name, so the operator's view is never served to it. Unset, every request is refused.
_OWN_HOSTS = "DLPIPE_UI_OWN_HOSTS"


def answer_only_at(app: Flask, host: str, port: int) -> None:
    """Answer requests addressed to `host`:`port` or localhost:`port` (no port for 80) only."""
    names = (host, "localhost")
    own = [f"{name}:{port}" for name in names] + (list(names) if port == 80 else [])
    app.config[_OWN_HOSTS] = tuple(own)


def _days_arg(options: UiOptions) -> int:
    text = request.args.get("days") or str(options.days)
    if not text.isdigit() or not 1 <= int(text) <= options.max_days:
        raise BadRequestError(f"days must be a whole number from 1 to {options.max_days}")
    return int(text)


def _error_page(code: int, message: str) -> tuple[str, int]:
    return render_template("error.html", code=code, message=message), code


def _register_errors(app: Flask) -> None:
    @app.errorhandler(BadRequestError)
    def bad_request(exc: BadRequestError) -> tuple[str, int]:
        return _error_page(400, str(exc))

    @app.errorhandler(NotFoundPageError)
    def not_found(exc: NotFoundPageError) -> tuple[str, int]:
        return _error_page(404, str(exc))

    @app.errorhandler(UnknownFeedError)
    def unknown_feed(exc: UnknownFeedError) -> tuple[str, int]:
        return _error_page(404, str(exc))

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> tuple[str, int]:
        return _error_page(exc.code or 500, f"{exc.name}: {request.method} {request.path}")

    @app.errorhandler(StoreUnavailableError)
    def store_down(exc: StoreUnavailableError) -> tuple[str, int]:
        log.warning("ui.store_unavailable", path=request.path, error=str(exc))
        return _error_page(503, f"the tables cannot be read now: {exc}")

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> tuple[str, int]:
        # A page never shows a traceback; the log has it. Masked before the cut: a cut may
        # leave less of a token than redaction recognises.
        log.exception("ui.failed", path=request.path)
        line = redact(f"{type(exc).__name__}: {exc}").splitlines()[0]
        return _error_page(500, line[:300])


def create_app(ops: OpsContext, options: UiOptions | None = None) -> Flask:
    """The Flask application over `ops`; it reads, never writes."""
    options = options or UiOptions()
    app = Flask(__name__)
    app.jinja_env.globals.update(
        refresh_seconds=options.refresh_seconds,
        older_than=present.duration_text(options.stuck_older_than_s),
    )
    present.register(app)
    app.jinja_env.globals.update(
        start_day_command=lambda day, feed=DEFAULT_FEED_NAME: start_day_command(
            ops.settings, day, feed
        ),
        idle_warning=idle_warning,
        starving_warning=starving_warning,
        idle_threshold_s=lambda: ops.settings.idle_warning_seconds,
        duration_span=present.span_text,
    )
    _register_errors(app)

    @app.before_request
    def own_host_only() -> tuple[str, int] | None:
        own: tuple[str, ...] = app.config.get(_OWN_HOSTS, ())
        if request.headers.get("Host", "").lower() in own:
            return None
        where = f"http://{own[0]}/" if own else "the address it is served on"
        return _error_page(400, f"this view answers only at {where}, not at this Host")

    @app.after_request
    def headers(response: Response) -> Response:
        response.headers.update(_HEADERS)
        return response

    @app.get("/")
    def grid_page() -> str:
        end = request.args.get("end")
        feed = parse_feed(request.args.get("feed"))
        shown = grid(ops, _days_arg(options), parse_date(end) if end else None, feed)
        if feed is not None and feed not in ops.feeds and shown.empty:
            window = f"from {shown.first} to {shown.end}"
            raise UnknownFeedError(f"feed {feed!r} is not configured and has no batch {window}")
        return render_template("grid.html", grid=shown, live=shown.live)

    @app.get("/day/<day>")
    def day_page(day: str) -> str:
        query = parse_files_query(request.args.to_dict())
        view = day_view(ops, parse_date(day), query, options)
        return render_template("day.html", view=view, live=view.live, now_ms=ops.now_ms())

    @app.get("/file/<file_id>")
    def file_page(file_id: str) -> str:
        view = job_view(ops, file_id)
        return render_template("file.html", view=view, live=False, now_ms=ops.now_ms())

    return app
