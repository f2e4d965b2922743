"""What the parts of the store (graph, usage, levels, locked contexts, …) see of
:class:`MemoryStore`: narrow protocols, so that the parts need not import the store that builds
them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import apsw

    from storage.embeddings import Embedder
    from storage.models import Memory
    from storage.vector_index import VectorIndex


class StoreConn(Protocol):
    """A store's open connection (one per thread)."""

    @property
    def conn(self) -> apsw.Connection: ...


class StoreWithMemories(StoreConn, Protocol):
    """The connection, and memories read whole."""

    def get_many(self, ids: Sequence[int]) -> list[Memory]: ...


class StoreWithVectors(StoreConn, Protocol):
    """The connection, the embedder and the vector index if it is loaded."""

    @property
    def embedder(self) -> Embedder | None: ...

    @property
    def vector_cache(self) -> VectorIndex | None: ...
