"""What LlamaIndex tells a tracing handler (as Langfuse or Arize would see it): its spans, its
instrumentation events and its legacy callback payloads, recorded for the tests that check none
carries what its reader may not see."""

from __future__ import annotations

import inspect
from typing import Any

from llama_index.core.callbacks import CBEventType
from llama_index.core.callbacks.base_handler import BaseCallbackHandler
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index_instrumentation.span_handlers.base import BaseSpanHandler
from pydantic import Field


class SpanRecorder(BaseSpanHandler[Any]):
    """Every span's arguments as it is entered, its result as it exits, its error if dropped."""

    entered: list[tuple[str, dict[str, Any]]] = Field(default_factory=list)
    exited: list[tuple[str, Any]] = Field(default_factory=list)
    dropped: list[tuple[str, BaseException | None]] = Field(default_factory=list)

    def new_span(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        parent_span_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.entered.append((id_, dict(bound_args.arguments)))

    def prepare_to_exit_span(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        result: Any | None = None,
        **kwargs: Any,
    ) -> None:
        self.exited.append((id_, result))

    def prepare_to_drop_span(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        err: BaseException | None = None,
        **kwargs: Any,
    ) -> None:
        self.dropped.append((id_, err))

    def told(self) -> list[tuple[str, str]]:
        """Each span's id beside the text of everything the handler was told of it."""
        return [(id_, repr(told)) for id_, told in [*self.entered, *self.exited, *self.dropped]]


class EveryEvent(BaseEventHandler):
    """Every instrumentation event, as a tracing handler on the root dispatcher sees it."""

    events: list[BaseEvent] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "EveryEvent"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self.events.append(event)


class EveryPayload(BaseCallbackHandler):
    """Every legacy callback payload, as a `CallbackManager` handler sees it."""

    def __init__(self) -> None:
        super().__init__(event_starts_to_ignore=[], event_ends_to_ignore=[])
        self.payloads: list[tuple[CBEventType, dict[str, Any]]] = []

    def on_event_start(
        self,
        event_type: CBEventType,
        payload: dict[str, Any] | None = None,
        event_id: str = "",
        parent_id: str = "",
        **kwargs: Any,
    ) -> str:
        self.payloads.append((event_type, payload or {}))
        return event_id

    def on_event_end(
        self,
        event_type: CBEventType,
        payload: dict[str, Any] | None = None,
        event_id: str = "",
        **kwargs: Any,
    ) -> None:
        self.payloads.append((event_type, payload or {}))

    def start_trace(self, trace_id: str | None = None) -> None:
        pass

    def end_trace(
        self, trace_id: str | None = None, trace_map: dict[str, list[str]] | None = None
    ) -> None:
        pass
