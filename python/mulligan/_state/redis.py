"""``mulligan.RedisState``: a connection to Redis, from a URL, holding state
that the processes of a service share (idempotency records, through
``IdempotencyStore(state=...)``; rate limits, through
``RateLimiter(state=...)``, 0.6).

.. versionadded:: 0.5.0
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from .. import _core, _validate
from .._validate import Seconds

_OWNER = "mulligan.RedisState"

# The logger of every part shared through Redis (0.6): a WARNING when a part
# falls back to its local state, an INFO when it shares again. A child of
# "mulligan", so handlers set there see these lines too. No line holds a
# secret: endpoints are rendered without user name or password.
LOGGER = logging.getLogger("mulligan.state")


class RedisState:
    """A connection to a Redis server (hiredis, in the C++ core).

    The URL is ``redis://[[user]:password@]host[:port][/db]``: ``AUTH
    password`` (requirepass) or ``AUTH user password`` (an ACL user), then
    ``SELECT db``; the user name and password are percent-decoded.
    ``rediss://`` (TLS) is refused: it needs hiredis >= 1.0 built with SSL,
    and Debian 12's hiredis 0.14 has neither.

    Every command is bounded by ``timeout`` and connecting by
    ``connect_timeout`` (an error caused by either names it: "no reply
    within 250 ms: timeout"). The host is at most 255 bytes (RFC 1035
    section 2.3.4). A server that is down, slow or failing gives
    :class:`mulligan.StateBackendUnavailable` (never a hang, never another
    error); reconnects wait on mulligan's own backoff (from 50 ms, doubling,
    full jitter, at most 5 s). A server that cannot be reached when the state
    is created is not an error: commands report it until a reconnect works.

    Keys live under ``prefix`` (a namespace shared by the processes of one
    service), one Redis Cluster hash tag per object:
    ``{prefix:kind:name}``.

    No password or user name appears in errors, :meth:`health`, ``repr`` or
    ``endpoint`` (``redis://host:port/db``).

    Thread-safe: one connection behind a mutex; calls release the GIL.

    Args:
        url: the server, a str (see above).
        prefix: the key namespace, 1 to 64 bytes of ``A-Z a-z 0-9 _ . -``
            (changed in 0.6: a ``:`` would let two prefixes name the same
            keys, ``"a:idem"`` + kind ``x`` being ``"a"`` + kind ``idem``).
            Default ``"mulligan"``.
        timeout: seconds one command may take, in [0.001, 3600].
            Default 0.25.
        connect_timeout: seconds connecting may take (TCP, AUTH and SELECT,
            each), in [0.001, 3600]. Default: ``timeout``.

    Raises:
        TypeError: an argument has the wrong type.
        ValueError: a malformed URL (the message names the part, never the
            password), a bad prefix or timeout.

    .. versionadded:: 0.5.0
    """

    __slots__ = ("_state",)

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "mulligan",
        timeout: Seconds = 0.25,
        connect_timeout: Optional[Seconds] = None,
    ) -> None:
        v = _validate
        if not isinstance(url, str):
            # Not repr(url): bytes holding a password would be shown.
            raise TypeError(f"{_OWNER}: url must be a str, got {type(url).__name__}")
        v.name(_OWNER, "prefix", prefix)
        command_timeout = v.seconds(_OWNER, "timeout", timeout, positive=True)
        connect = (
            command_timeout
            if connect_timeout is None
            else v.seconds(_OWNER, "connect_timeout", connect_timeout, positive=True)
        )
        try:
            self._state = _core.RedisState(
                url, prefix=prefix, connect_timeout=connect, command_timeout=command_timeout
            )
        except ValueError as e:
            raise ValueError(f"{_OWNER}: {e}") from None

    @property
    def endpoint(self) -> str:
        """``redis://host:port/db``, without credentials."""
        return self._state.endpoint

    @property
    def prefix(self) -> str:
        """The key namespace."""
        return self._state.prefix

    def ping(self) -> None:
        """Sends PING.

        Raises:
            StateBackendUnavailable: the server did not answer in time, or
                refused (e.g. a wrong password).
        """
        self._state.ping()

    def health(self) -> dict[str, Any]:
        """Returns ``{"reachable": bool, "endpoint": str, "last_error": str,
        "round_trips": int, "failures": int, "reconnects": int}`` (no secret
        in any value). ``last_error`` is the failure since the last success,
        or ``""``: the next command that succeeds clears it (changed in 0.6;
        ``failures`` keeps the count)."""
        return self._state.health()

    def __repr__(self) -> str:
        return f"<mulligan.RedisState {self.endpoint} prefix={self.prefix!r}>"


def _core_state(state: Any, owner: str) -> Optional[Any]:
    """Returns the ``_core.RedisState`` behind a ``state=`` argument (None
    for None); TypeError for anything else."""
    if state is None:
        return None
    if not isinstance(state, RedisState):
        raise TypeError(f"{owner}: state must be a mulligan.RedisState or None, "
                        f"got {type(state).__name__}")
    return state._state
