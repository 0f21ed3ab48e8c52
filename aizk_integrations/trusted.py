"""Building models from values already checked, without pydantic's generic second pass.

`model_construct` skips validation but still walks every field looking for aliases and
defaults, which costs more than everything else an item goes through on its way into the block.
The mapping and result paths build one model per kept item on every call from values they have
just checked, so they fill the instance the way `model_construct` does, minus the walk.
`tests/test_fast_paths.py` pins that the two build equal instances.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

Model = TypeVar("Model", bound=BaseModel)

_new = object.__new__
# The four slots `BaseModel` declares; their descriptors set them twice as fast as
# `object.__setattr__`, which has to look the name up first.
_SLOTS = vars(BaseModel)
_set_dict = _SLOTS["__dict__"].__set__
_set_fields_set = _SLOTS["__pydantic_fields_set__"].__set__
_set_extra = _SLOTS["__pydantic_extra__"].__set__
_set_private = _SLOTS["__pydantic_private__"].__set__


def trusted(model: type[Model], fields: dict[str, Any]) -> Model:
    """`model.model_construct(**fields)` for a model given every field, checked by the caller.

    Only for models without private attributes, extra fields or `model_post_init`, which is what
    `model_construct` would otherwise have to honour; the test above checks the models it serves.
    """
    instance = _new(model)
    _set_dict(instance, fields)
    _set_fields_set(instance, set(fields))
    _set_extra(instance, None)
    _set_private(instance, None)
    return instance
