"""Rendering shared by the participant pages (``web/app.py``) and the dashboard
(``web/dashboard.py``): the Jinja2 templates (autoescaped) and the two page helpers.

It imports neither of them, so both import it and neither imports the other for a helper."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from .settings import money_text

HERE = Path(__file__).parent

templates = Jinja2Templates(directory=str(HERE / "templates"))
#: Money on every page as the participant pages write it ("$1,250.00"): ``{{ x|money }}``.
templates.env.filters["money"] = money_text


def page(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """The template ``name`` rendered with ``context``, answered with ``status``."""
    return templates.TemplateResponse(request, name, context, status_code=status)


def not_found(request: Request) -> HTMLResponse:
    """The 404 page: the same message for every unknown address or session."""
    return page(request, "message.html", title="Not found", message="This page does not exist.", status=404)
