"""The memory inspector: a local web page over a :class:`~langmem_cog.memory.CogMemory`.

``langmem-cog ui --demo`` serves it on http://127.0.0.1:8765/?token=... (the API needs that
access token; see :mod:`langmem_cog.ui.server`): a search box with the operator loop's trace,
grounded evidence and raw hybrid hits; the PEC2F graph by node type; and a per-person timeline.
Its requests write nothing to disk (:mod:`langmem_cog.ui.readonly`). See docs/INSPECTOR.md.

Example:
    >>> from langmem_cog.ui import InspectorAPI, make_server  # doctest: +SKIP
    >>> server = make_server(InspectorAPI(memory), port=0)  # doctest: +SKIP
    >>> server.serve_forever()  # doctest: +SKIP
"""

from langmem_cog.ui.api import InspectorAPI, locomo_conversations, sample_conversation
from langmem_cog.ui.server import InspectorServer, make_server, serve_in_thread

__all__ = [
    "InspectorAPI",
    "InspectorServer",
    "make_server",
    "serve_in_thread",
    "sample_conversation",
    "locomo_conversations",
]
