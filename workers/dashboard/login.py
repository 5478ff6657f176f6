"""Signing in and out: the form, its answer (a new sign-in's cookie, or one more wrong token
counted against the address and the token) and sign-out, which ends the sign-in on the server."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from workers.dashboard.answers import JSON
from workers.dashboard.auth import COOKIE, Gate, client_address
from workers.dashboard.guard import too_many_wrong_tokens

Page = Callable[..., HTMLResponse]  # page(request, template name, **context)


def _local_target(target: str) -> str:
    """Where sign-in may send a browser: a path of this dashboard, never another site
    (`//host` and `/\\host` are other sites to a browser)."""
    if target.startswith("/") and target[1:2] not in ("/", "\\") and target.isprintable():
        return target
    return "/"


def add_routes(app: FastAPI, gate: Gate, page: Page) -> None:
    """GET and POST /login, POST /logout."""

    @app.get("/login", response_class=HTMLResponse)
    async def login_form(request: Request, next: str = "/") -> HTMLResponse:
        return page(request, "login.html", next=_local_target(next), error=None)

    @app.post("/login")
    async def login(request: Request) -> Response:
        address = client_address(request.scope)
        if gate.needs_sign_in:
            # Counted before the body is read: attempts whose bodies all arrive at once were
            # all let through by a check made here and a count made after the comparison.
            refused = gate.reserve(address)
            if refused is not None:
                return too_many_wrong_tokens(refused)
        # The sign-in form is url-encoded: parsed here (the guard bounds the body), no
        # multipart parser needed.
        form = parse_qs((await request.body()).decode(errors="replace"))
        token = form.get("token", [""])[0]
        target = _local_target(form.get("next", ["/"])[0])
        if not gate.needs_sign_in:
            return RedirectResponse(target, 303)
        if not gate.token_matches(token):
            return page(
                request, "login.html", next=target, error="That token is not this dashboard's."
            )
        gate.release(address)
        response = RedirectResponse(target, 303)
        # Secure over TLS: uvicorn takes the scheme from X-Forwarded-Proto of a proxy it trusts.
        # The cookie still reaches other ports of this host (cookies ignore ports): it is a
        # random id that expires and is ended by sign-out, never the token.
        response.set_cookie(
            COOKIE,
            gate.sign_in(),
            max_age=int(gate.sign_ins.lifetime_s),
            path="/",
            secure=request.url.scheme == "https",
            httponly=True,
            samesite="strict",
        )
        return response

    @app.post("/logout")
    async def logout(request: Request) -> Response:
        gate.sign_out(request.cookies.get(COOKIE))
        response = JSON({"answer": "signed out"})
        response.delete_cookie(
            COOKIE,
            path="/",
            secure=request.url.scheme == "https",
            httponly=True,
            samesite="strict",
        )
        return response
