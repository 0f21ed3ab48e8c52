"""The instrumentation event a postprocessor call sends: its counts, nothing else."""

from __future__ import annotations

from llama_index.core.instrumentation.events import BaseEvent
from pydantic import Field


class AizkEvidencePackedEvent(BaseEvent):
    """What one call of the postprocessor kept and left out, sent inside its span.

    Tracing handlers see it even when nothing was kept and the query got no context at all,
    which is when "why is my context empty?" gets asked.
    """

    counts: dict[str, int | bool] = Field(
        description=(
            "kept, cut_by_budget, withheld (unreadable and malformed among them), tokens_used, "
            "budget, max_fetch_reached: no lanes, ids or text."
        )
    )

    @classmethod
    def class_name(cls) -> str:
        return "AizkEvidencePackedEvent"
