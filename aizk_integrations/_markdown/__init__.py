"""Rendering safety: the least escaping that keeps retrieved text inside its own bullet in
every renderer the block is shown in (`containment`). Imports nothing of the package; the
core's rendering calls it.
"""
