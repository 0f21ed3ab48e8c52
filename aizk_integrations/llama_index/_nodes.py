"""Where a LlamaIndex node keeps what the packer reads, and the nodes it hands back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final
from uuid import NAMESPACE_URL, uuid5

from llama_index.core.schema import (
    BaseNode,
    ImageNode,
    MetadataMode,
    Node,
    NodeWithScore,
    RelatedNodeInfo,
    TextNode,
)

from aizk_integrations._core.evidence import kept_item_metadata
from aizk_integrations._errors import ItemError, quoted
from aizk_integrations._run.reading import BLOCK_KEY, Source
from aizk_integrations._run.run import Packing, cited_items

RECALL_KEY: Final = BLOCK_KEY
"""Metadata key of the block node holding the public `RecallResult` JSON."""
COUNTS_KEY: Final = "aizk_counts"
"""Metadata key of the block node holding its counts (`Packing.counts`): no lanes, ids or text."""
CITATIONS_KEY: Final = "aizk_citations"
"""Metadata key of a cited block node listing each number's item: `number`, the kept node's
`id`, and its citation keys' values, for a "Sources" panel or mapping `[n]` back."""
_BLOCK_ID_NAMESPACE = uuid5(NAMESPACE_URL, "aizk://integrations/llama-index/evidence-block")
"""Namespace of the block node's content-derived id; only its being constant matters."""


def _metadata_of(scored: object, position: int) -> object:
    if not isinstance(scored, NodeWithScore):
        hint = " (wrap each node: NodeWithScore(node=node))" if isinstance(scored, BaseNode) else ""
        raise ItemError(
            position,
            f"expected a NodeWithScore, got {type(scored).__name__}{hint}",
            authorized=False,
        )
    return scored.node.metadata


def _text_of(scored: NodeWithScore, position: int) -> object:
    """A node's text without its metadata, refusing media that has no text."""
    node = scored.node
    text = node.get_content(MetadataMode.NONE)
    if text == "" and _carries_media(node):
        raise ItemError(
            position,
            f"content is a {type(node).__name__} with media but no text; evidence must be text "
            "(give the node text, or filter media nodes out before this postprocessor)",
        )
    return text


def _carries_media(node: BaseNode) -> bool:
    """Whether an empty-text node is an image, audio or video rather than an empty text."""
    if isinstance(node, ImageNode):
        return any((node.image, node.image_path, node.image_url))
    if isinstance(node, Node):
        return any((node.image_resource, node.audio_resource, node.video_resource))
    return False


def _name(nodes: Sequence[object], position: int, authorized: bool) -> str:
    """How an error names a node: its id once it is known to be readable, and its index."""
    scored = nodes[position]
    if not authorized or not isinstance(scored, NodeWithScore):
        return f"nodes[{position}]"
    return f"node {quoted(scored.node.node_id)} (position {position})"


def _score_of(scored: NodeWithScore) -> object:
    return scored.score


NODES: Final = Source[NodeWithScore](
    expected="a list of NodeWithScore",
    metadata_of=_metadata_of,
    text_of=_text_of,
    name=_name,
    score_of=_score_of,
)
"""How the packer reads LlamaIndex nodes."""


def block_node(packing: Packing[NodeWithScore]) -> NodeWithScore:
    """The single node the prompt receives: the block as text, the public JSON out of view.

    The metadata keys are excluded from both the LLM and embedding views, and the text template
    is only the content, so `get_content` in any of those modes is exactly the block even if a
    later step adds metadata. The id is derived from the block and the counts, so equal outputs
    are equal nodes (the sync and async paths, a retried query); the public JSON adds nothing
    the block does not already say. Its score is its first item's (the best, whichever way the
    scores rank), so a postprocessor after this one that filters by score
    (`SimilarityPostprocessor`) keeps the block when it would keep that item, rather than
    dropping a node with no score.
    """
    result = packing.result
    block = result.to_markdown()
    counts = packing.counts
    metadata: dict[str, Any] = {
        RECALL_KEY: result.model_dump(mode="json"),
        COUNTS_KEY: counts,
    }
    cited = cited_items(packing, lambda scored: (scored.node.node_id, scored.node.metadata))
    if cited is not None:
        metadata[CITATIONS_KEY] = cited
    node = TextNode(
        id_=str(uuid5(_BLOCK_ID_NAMESPACE, f"{sorted(counts.items())}\n{block}")),
        text=block,
        metadata=metadata,
        excluded_llm_metadata_keys=list(metadata),
        excluded_embed_metadata_keys=list(metadata),
        text_template="{content}",
    )
    return NodeWithScore(node=node, score=packing.scores[0] if packing.kept else None)


def kept_nodes(
    packing: Packing[NodeWithScore], citation_keys: Sequence[str]
) -> list[NodeWithScore]:
    """New nodes for the kept items: same id, text and score, public metadata only.

    The original metadata (lane, scope ids, artifact ids, anything else the store attached) is
    replaced by the public evidence fields (`provenance`, `scope_names`, `resource_uri`), so a
    pipeline that prints node metadata to the model shows provenance and scope names, never
    lanes or scope ids. The `citation_keys` are copied too, hidden from the LLM and embedding
    views, and so is where the node came from (its relationships, without their metadata).
    """
    kept = []
    for item in packing.kept:
        original = packing.items[item.position]
        source = original.node
        metadata = kept_item_metadata(item.evidence)
        citations = [key for key in citation_keys if key in source.metadata and key not in metadata]
        metadata.update((key, source.metadata[key]) for key in citations)
        relationships = {
            kind: [_bare(each) for each in info] if isinstance(info, list) else _bare(info)
            for kind, info in source.relationships.items()
        }
        node = TextNode(
            id_=source.node_id,
            text=item.evidence.text,
            metadata=metadata,
            excluded_llm_metadata_keys=citations,
            excluded_embed_metadata_keys=citations,
            relationships=relationships,
        )
        kept.append(NodeWithScore(node=node, score=original.score))
    return kept


def _bare(info: RelatedNodeInfo) -> RelatedNodeInfo:
    """Where a node came from, without the related node's metadata (which may name scopes)."""
    return RelatedNodeInfo(node_id=info.node_id, node_type=info.node_type, hash=info.hash)
