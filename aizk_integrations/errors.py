"""The one exception type callers catch for bad evidence input."""


class EvidenceError(ValueError):
    """An evidence item, a setting or a counter result that the packer cannot accept.

    It subclasses `ValueError` so existing `except ValueError` handlers keep working; the message
    always names the item (position or id), the field, and what is allowed.
    """
