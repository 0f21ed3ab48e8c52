"""LlamaIndex's context chat engines, with the retrieved context in the user's turn.

Both subclass LlamaIndex's own engines and replace only the synthesizer they answer with. That
reaches into the parents' private attributes, which LlamaIndex exposes no other way: `_llm`
(the model to answer with), `_prefix_messages` / `_system_prompt` (the app's instructions),
and the engines' context templates (`_context_template`, `_context_refine_template`,
`_context_prompt_template`, `_context_refine_prompt_template`); `_get_response_synthesizer`
is the parents' own (private) hook for exactly this.
"""

from __future__ import annotations

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.callbacks import CallbackManager
from llama_index.core.chat_engine import CondensePlusContextChatEngine, ContextChatEngine
from llama_index.core.chat_engine.utils import get_response_synthesizer
from llama_index.core.llms import LLM
from llama_index.core.prompts import PromptTemplate
from llama_index.core.response_synthesizers import CompactAndRefine


class AizkContextChatEngine(ContextChatEngine):
    """LlamaIndex's context chat engine, with the retrieved context in the user's turn.

    `ContextChatEngine` puts the context into the system message, the turn a model trusts
    most, so evidence there borrows authority it should not have. This engine keeps the system
    message for the app's own instructions (`system_prompt`) and puts the context, through the
    same `context_template`, at the head of the latest user message. Built like its parent:
    `AizkContextChatEngine.from_defaults(retriever=..., llm=..., node_postprocessors=[...])`.
    The memory keeps the user's words alone, so earlier turns carry no old blocks.
    """

    def _get_response_synthesizer(
        self, chat_history: list[ChatMessage], streaming: bool = False
    ) -> CompactAndRefine:
        return _context_in_user_turn(
            self._llm,
            self.callback_manager,
            self._prefix_messages,
            chat_history,
            (self._context_template, self._context_refine_template),
            streaming,
        )


class AizkCondensePlusContextChatEngine(CondensePlusContextChatEngine):
    """LlamaIndex's condense-plus-context chat engine, with the retrieved context in the user's
    turn.

    Like `AizkContextChatEngine`: the system message keeps only `system_prompt`, and the
    context, laid out by `context_prompt`, heads the latest user message, followed by the
    (condensed) question. Built like its parent, with `from_defaults`.
    """

    def _get_response_synthesizer(
        self, chat_history: list[ChatMessage], streaming: bool = False
    ) -> CompactAndRefine:
        instructions = []
        if self._system_prompt:
            role = self._llm.metadata.system_role
            instructions.append(ChatMessage(role=role, content=self._system_prompt))
        return _context_in_user_turn(
            self._llm,
            self.callback_manager,
            instructions,
            chat_history,
            (self._context_prompt_template, self._context_refine_prompt_template),
            streaming,
        )


def _context_in_user_turn(
    llm: LLM,
    callback_manager: CallbackManager,
    instructions: list[ChatMessage],
    chat_history: list[ChatMessage],
    templates: tuple[PromptTemplate, PromptTemplate],
    streaming: bool,
) -> CompactAndRefine:
    """The synthesizer a context chat engine answers with: its instructions, the history, then
    one user turn holding the context (as the engine's template lays it out) and the question.
    """
    qa, refine = templates
    return get_response_synthesizer(
        llm,
        callback_manager,
        [*instructions, *chat_history, _user_turn(qa)],
        [*instructions, *chat_history, _user_turn(refine)],
        streaming,
        qa_function_mappings=qa.function_mappings,
        refine_function_mappings=refine.function_mappings,
    )


def _user_turn(context_template: PromptTemplate) -> ChatMessage:
    """The latest user message: the context (as the template lays it out), then the question."""
    return ChatMessage(role=MessageRole.USER, content=context_template.template + "\n{query_str}")
