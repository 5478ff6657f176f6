"""Debian's Chromium, headless, driven by Playwright, for what only a browser shows (Plotly's
drawing, the page's script)."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from typing import Any

import pytest

CHROMIUM = os.environ.get("POLICYFORGE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"]


@contextlib.asynccontextmanager
async def chromium_page() -> AsyncIterator[tuple[Any, list[str]]]:
    """A fresh page, and the uncaught errors of its scripts."""
    from playwright.async_api import async_playwright

    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"no Chromium at {CHROMIUM}: `make setup` installs Debian's chromium")
    errors: list[str] = []
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            tab = await browser.new_page()
            tab.on("pageerror", lambda e: errors.append(str(e)))
            yield tab, errors
        finally:
            await browser.close()
