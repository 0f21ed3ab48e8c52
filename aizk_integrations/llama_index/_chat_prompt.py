"""The one prompt a chat engine sends: instructions, history, then one user turn holding the
evidence block and the question, measured against the model's window before the block is packed.

LlamaIndex's chat engines hand a response synthesizer templates made of the whole conversation,
so earlier turns are formatted again as templates and a block too big for the window is split
over several LLM calls, each with a part of it. Here the messages are built directly: only the
new user turn is filled in from a template, and the block is packed to exactly the room the
other messages leave, so the answer is one call holding the whole block.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from llama_index.core import Settings
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM
from llama_index.core.prompts import PromptTemplate

from aizk_integrations._tokens import TokenCounter

PER_MESSAGE: Final = 3
"""Tokens a chat format adds around each message (role markers, separators), as LlamaIndex's
`TokenCounter` and OpenAI's guide count them."""
REPLY: Final = 3
"""Tokens the format adds to prime the reply."""


@dataclass(frozen=True)
class Window:
    """What a model takes in at once, and how much of it its answer needs."""

    context_window: int
    num_output: int

    @property
    def for_prompt(self) -> int:
        """Tokens the prompt may use: the window less the answer's share (none when an LLM
        reports no output size, as LlamaIndex's mocks report -1)."""
        return max(self.context_window - max(self.num_output, 0), 0)


def window_of(llm: LLM) -> Window:
    """The window LlamaIndex's own synthesizers fill for `llm`: the one the app set with
    `Settings.context_window` / `Settings.num_output`, else the LLM's own metadata."""
    # LlamaIndex's synthesizers and indices read the private `Settings._prompt_helper` in the
    # same way: it is the only place that says whether the app set a window. The public
    # `Settings.context_window` cannot tell: reading it while unset creates a default helper
    # that every LlamaIndex engine built afterwards would then use instead of its own LLM's.
    helper = Settings._prompt_helper
    if helper is not None:
        return Window(helper.context_window, helper.num_output)
    return Window(llm.metadata.context_window, llm.metadata.num_output)


def count_messages(messages: Sequence[ChatMessage], count: TokenCounter) -> int:
    """Tokens of `messages` as a chat model reads them: each message's role and text, plus the
    format's own tokens around each one and for the reply."""
    return REPLY + sum(
        count(message.role.value) + count(message.content or "") + PER_MESSAGE
        for message in messages
    )


def user_turn(template: PromptTemplate, block: str, question: str) -> str:
    """The latest user message: the block laid out by the engine's template, then the question
    (where the template places `{query_str}`, there instead).

    Only this turn is ever formatted: the block and the question are values, so braces in them,
    like braces in earlier turns, reach the model as written.
    """
    if "query_str" in template.template_vars:
        return template.format(context_str=block, query_str=question)
    return template.format(context_str=block) + "\n" + question


@dataclass(frozen=True)
class ChatPrompt:
    """One chat call's messages around the block, and the tokens the block may take."""

    head: tuple[ChatMessage, ...]
    """The app's instructions: the system prompt or prefix messages."""
    history: tuple[ChatMessage, ...]
    """The conversation so far, as much of the memory's as fits, oldest first."""
    template: PromptTemplate
    question: str
    room: int
    """Tokens left for the block once every other message is counted: 0 when none."""

    def messages(self, block: str) -> list[ChatMessage]:
        """What the LLM is sent: instructions, history, then the one user turn."""
        turn = ChatMessage(
            role=MessageRole.USER, content=user_turn(self.template, block, self.question)
        )
        return [*self.head, *self.history, turn]


def chat_prompt(
    head: Sequence[ChatMessage],
    history: Sequence[ChatMessage],
    template: PromptTemplate,
    question: str,
    window: Window,
    count: TokenCounter,
) -> ChatPrompt:
    """Lay out one chat call: the history gets at most half of what the window leaves after the
    instructions and the question, the block the rest.

    Half, so a long conversation never squeezes the evidence out, and the evidence (which the
    budget caps anyway) never the conversation; the oldest turns give way first.
    """
    fixed = count_messages([*head, ChatMessage(content=user_turn(template, "", question))], count)
    available = max(window.for_prompt - fixed, 0)
    kept = _latest(history, available // 2, count)
    used = count_messages(kept, count) - REPLY if kept else 0
    return ChatPrompt(tuple(head), kept, template, question, available - used)


def _latest(
    history: Sequence[ChatMessage], most: int, count: TokenCounter
) -> tuple[ChatMessage, ...]:
    """The newest messages of `history` within `most` tokens, starting at a user message (a
    conversation cut before an answer or a tool result would start mid-exchange)."""
    start = len(history)
    used = 0
    while start > 0:
        cost = count_messages(history[start - 1 : start], count) - REPLY
        if used + cost > most:
            break
        used += cost
        start -= 1
    while start < len(history) and history[start].role != MessageRole.USER:
        start += 1
    return tuple(history[start:])
