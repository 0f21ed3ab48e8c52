"""A request's aizk settings, as LangChain carries them in a runnable's config.

One app usually serves many readers, so each request names its reader in its config
(`config={"configurable": {"aizk_reader": reader}}`), and may change its budget there too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import (
    ConfigurableFieldSpec,
    RunnableConfig,
    ensure_config,
    patch_config,
)
from pydantic import ConfigDict

from aizk_integrations._errors import quoted
from aizk_integrations._run.settings import (
    KnownSettings,
    PackingSettings,
    call_budget,
    did_you_mean,
)
from aizk_integrations._scopes.directory import ScopeDirectory, require_reader
from aizk_integrations._tokens import is_int

BUDGET_CONFIG_KEY: Final = "aizk_budget"
"""`configurable` key: this request's token budget (an int from 1 to `max_budget`)."""

READER_CONFIG_KEY: Final = "aizk_reader"
"""`configurable` key: this request's reader, a `ScopeDirectory`."""

AUTH_USER_CONFIG_KEY: Final = "langgraph_auth_user"
"""Where LangGraph Platform puts the authenticated user in a run's `configurable`."""

ROOM_CONFIG_KEY: Final = "aizk_room"
"""`configurable` key: the tokens the model's window leaves for the block (`context_room`); the
request packs to the smaller of this and its budget, and 0 keeps nothing."""

CONFIG_SPECS: Final = (
    ConfigurableFieldSpec(
        id=BUDGET_CONFIG_KEY,
        annotation=int,
        name="aizk budget",
        description="This request's token budget, from 1 to the packer's max_budget.",
        default=None,
    ),
    ConfigurableFieldSpec(
        id=ROOM_CONFIG_KEY,
        annotation=int,
        name="aizk room",
        description=(
            "The tokens the model's window leaves for the block (context_room): the request "
            "packs to at most this, 0 keeping nothing."
        ),
        default=None,
    ),
)
"""The per-request settings, as LangChain's `config_specs` list them (and LangServe's
`/config_schema` shows clients). The reader is not among them: it is the server's to set
(`aizk_reader`), never a client's."""

_KNOWN = (READER_CONFIG_KEY, *(spec.id for spec in CONFIG_SPECS))
_KNOWN_KEYS = ", ".join(repr(key) for key in _KNOWN)

PER_REQUEST: Final = (
    f"pass this request's reader as config={{'configurable': {{{READER_CONFIG_KEY!r}: reader}}}}"
)
"""How the warnings tell a LangChain user to name a request's reader."""

THROUGH_COMPRESSION: Final = (
    f"{PER_REQUEST}. LangChain's ContextualCompressionRetriever hands that config to neither "
    "its base retriever nor its compressor: use AizkEvidenceRetriever(base_retriever=..., "
    "compressor=...) in its place, which carries it to both"
)
"""`PER_REQUEST` where the reader may have been named and lost on the way: in a retriever that
another retriever ran, or in `compress_documents`, which is how that retriever calls a packer."""

_LCEL_STEP_TAGS = ("seq:step:", "map:key:")
"""The tags LangChain gives a runnable it runs as a step of a `|` chain or a dict of steps."""

_request_config: ContextVar[RunnableConfig | None] = ContextVar("aizk_request_config", default=None)
"""The config of the `AizkEvidenceRetriever` call in progress, for the compressor it wraps."""


@contextmanager
def carrying(config: RunnableConfig | None) -> Iterator[None]:
    """Make `config` the request config of what runs inside, for `current_config`.

    A retriever that runs others (`MultiQueryRetriever`, `MergerRetriever`,
    `RePhraseQueryRetriever`) calls them with a config of callbacks alone, which names no
    reader: a call inside a request keeps the settings of the request around it that its own
    config does not set, so the reader reaches them. The request config is put back when the
    call ends, so it never outlives its request.
    """
    config = ensure_config(config)
    around = _request_config.get()
    if around is not None:
        configurable = {**(around.get("configurable") or {}), **config.get("configurable", {})}
        config = patch_config(config, configurable=configurable)
    token = _request_config.set(config)
    try:
        yield
    finally:
        _request_config.reset(token)


class ConfigCarryingRetriever(KnownSettings, BaseRetriever):
    """A retriever whose call's config is the request config of all it runs.

    LangChain hands `_get_relevant_documents` callbacks but not the config, and the config is
    what names the reader; so the call carries it (`carrying`) for `current_config` to read.
    """

    # A refused setting is never quoted: a store or retriever's repr can hold stored text.
    # Unknown settings are refused by name (KnownSettings), as every aizk adapter refuses them.
    model_config = ConfigDict(hide_input_in_errors=True, extra="forbid")

    def invoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        with carrying(config):
            return super().invoke(input, config, **kwargs)

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        with carrying(config):
            return await super().ainvoke(input, config, **kwargs)


def current_config() -> RunnableConfig:
    """The config of the request in progress: an `AizkEvidenceRetriever` call's, or the one
    LangChain carries for the runnable in progress (empty outside any)."""
    return _request_config.get() or ensure_config()


def request_settings(
    settings: PackingSettings, config: RunnableConfig
) -> tuple[int | None, ScopeDirectory | None]:
    """A request's budget and reader from its `configurable`; absent keys mean "as built"."""
    configurable = _configurable(config)
    budget = configurable.get(BUDGET_CONFIG_KEY)
    if budget is not None:
        try:
            budget = call_budget(settings, budget)
        except (TypeError, ValueError) as error:
            raise type(error)(f"configurable {BUDGET_CONFIG_KEY!r}: {error}") from None
    room = configurable.get(ROOM_CONFIG_KEY)
    if room is not None:
        # A ceiling the window sets, not a budget asked for: above max_budget it simply does
        # not bind, and 0 (no room at all) keeps nothing.
        if not is_int(room) or room < 0:
            raise TypeError(
                f"configurable {ROOM_CONFIG_KEY!r} must be an int >= 0 (the tokens "
                f"context_room gives), not {quoted(room)}"
            )
        budget = min(settings.budget if budget is None else budget, room)
    return budget, request_reader(config, getattr(settings, "reader_of_user", None))


def _configurable(config: RunnableConfig) -> Mapping[str, Any]:
    """The request's `configurable`, refused if it holds an `aizk_` key that is none of ours.

    Every part that reads a request's settings reads them here, so a misspelled key (such as
    `aizk_readr`) is the error of the first part that reads the config, said alone: never a
    warning that the request names no reader, as if the reader had not been given.
    """
    configurable: Mapping[str, Any] = config.get("configurable") or {}
    for key in configurable:
        if isinstance(key, str) and key.startswith("aizk_") and key not in _KNOWN:
            raise ValueError(
                f"configurable {quoted(key)} is not an aizk setting"
                f"{did_you_mean(key, _KNOWN)} (the known keys: {_KNOWN_KEYS})"
            )
    return configurable


ReaderOfUser = Callable[[Any], ScopeDirectory | None]
"""Maps the user a server authenticated to their reader (see `request_reader`)."""


def request_reader(
    config: RunnableConfig, reader_of_user: ReaderOfUser | None = None
) -> ScopeDirectory | None:
    """The reader a request names: the authenticated user's, where the server put one in the
    config (LangGraph Platform's `langgraph_auth_user`) and `reader_of_user` maps it, else the
    one in `aizk_reader`.

    With `reader_of_user`, what a client sends under `aizk_reader` is never read: only the
    server's own word on who is asking chooses the reader. Without it, `aizk_reader` must be
    a `ScopeDirectory`, which a client sending JSON cannot make.
    """
    configurable = _configurable(config)
    if reader_of_user is not None:
        user = configurable.get(AUTH_USER_CONFIG_KEY)
        return None if user is None else reader_of_user(user)
    if READER_CONFIG_KEY not in configurable:
        return None
    reader = configurable[READER_CONFIG_KEY]
    try:
        return require_reader(reader, f"configurable {READER_CONFIG_KEY!r}")
    except TypeError as error:
        raise TypeError(
            f"{error}; a reader is the server's to choose: set it where the server "
            "authenticates the request, never from what a client sends"
            + (_LOST_IN_SERIALIZATION if reader is None else "")
        ) from None


_LOST_IN_SERIALIZATION = (
    ". None is what LangChain's loads(..., ignore_unserializable_fields=True) leaves of a "
    "reader bound with .with_config: dumpd cannot write one, so bind the reader again after "
    "loading, or pickle the chain (a reader pickles)"
)


def missing_reader_advice(
    config: RunnableConfig,
    reader_of_user: ReaderOfUser | None,
    run: CallbackManagerForRetrieverRun | AsyncCallbackManagerForRetrieverRun | None = None,
) -> str:
    """How to give a request that names no reader one: the config key, or the mapping of the
    user a server authenticated, when the request names one that nothing here maps.

    `run` is the retriever's own run, when it was invoked as a retriever. Run by another
    retriever (neither on its own nor as a step of a `|` chain), it may have lost a reader the
    request named on the way, as inside LangChain's ContextualCompressionRetriever: the advice
    then says so. Anywhere else that retriever is nowhere in the call, and is not mentioned.
    """
    configurable: Mapping[str, Any] = config.get("configurable") or {}
    if reader_of_user is None and configurable.get(AUTH_USER_CONFIG_KEY) is not None:
        return (
            f"the request names an authenticated user ({AUTH_USER_CONFIG_KEY!r}) but nothing "
            "maps it to a reader here: give this part the packer's reader_of_user too"
        )
    if run is None or run.parent_run_id is None:
        return PER_REQUEST
    if any(tag.startswith(_LCEL_STEP_TAGS) for tag in run.tags):
        return PER_REQUEST
    return THROUGH_COMPRESSION


def with_reader(config: RunnableConfig, reader: ScopeDirectory | None) -> RunnableConfig:
    """`config` naming `reader`, so what runs inside reads the same reader as the packer."""
    configurable: Mapping[str, Any] = config.get("configurable") or {}
    if reader is None or configurable.get(READER_CONFIG_KEY) is reader:
        return config
    return patch_config(config, configurable={**configurable, READER_CONFIG_KEY: reader})
