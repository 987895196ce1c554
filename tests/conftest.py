"""Configuration shared by every test: anyio runs async tests on asyncio only.

asyncssh is asyncio-only, so trio is never a backend here.  The fixture is session
scoped so session-scoped async fixtures can use it.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"
