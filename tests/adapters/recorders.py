"""What the frameworks' own parts were handed, recorded the way their tracing tools see it.

One of each, for every test that asks: the messages a chat model call received, the per-request
settings a retriever was invoked with, and the `AizkEvidencePackedEvent` events LlamaIndex sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from pydantic import Field

from aizk_integrations.llama_index import AizkEvidencePackedEvent


class ChatModelCalls(BaseCallbackHandler):
    """Every chat model call's messages, as the model received them."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.calls.extend(messages)


class SettingsRecorder(BaseRetriever):
    """A retriever that returns `documents` and notes the `configurable` of every call."""

    documents: list[Document]
    seen: list[dict[str, Any]] = Field(default_factory=list)

    def invoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        self.seen.append(dict((config or {}).get("configurable", {})))
        return super().invoke(input, config, **kwargs)

    async def ainvoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        self.seen.append(dict((config or {}).get("configurable", {})))
        return await super().ainvoke(input, config, **kwargs)

    def _get_relevant_documents(self, query: str, **kwargs: Any) -> list[Document]:
        return list(self.documents)


class PackedEvents(BaseEventHandler):
    """The `AizkEvidencePackedEvent` events a LlamaIndex tracing handler receives."""

    events: list[AizkEvidencePackedEvent] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "PackedEvents"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        if isinstance(event, AizkEvidencePackedEvent):
            self.events.append(event)


@contextmanager
def packed_events() -> Iterator[PackedEvents]:
    """Record the events sent inside, as a handler on LlamaIndex's root dispatcher would."""
    recorder = PackedEvents()
    root = get_dispatcher()
    root.add_event_handler(recorder)
    try:
        yield recorder
    finally:
        root.event_handlers.remove(recorder)
