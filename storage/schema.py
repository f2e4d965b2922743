"""Numbered schema migrations; ``MIGRATIONS[n-1]`` brings ``user_version`` from n-1 to n."""

from __future__ import annotations

from storage.models import REVIEWED_SOURCES

_KINDS = (
    "'fact','decision','episode','solution','pattern','workflow','convention','preference',"
    "'summary'"
)
_REVIEWED = ",".join(f"'{s}'" for s in REVIEWED_SOURCES)
_EDGE_TYPES = (
    "'RELATES_TO','SIMILAR_TO','LEADS_TO','DERIVED_FROM','SOLVES','SUPERSEDES',"
    "'OCCURRED_BEFORE','EVOLVED_INTO','CONTRADICTS','INVALIDATED_BY','PREFERS_OVER',"
    "'PART_OF','DEPENDS_ON','IMPLEMENTS','EXEMPLIFIES'"
)

_V1 = f"""
CREATE TABLE meta(
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO meta(key, value) VALUES ('generation', '0'), ('vector_generation', '0');

CREATE TABLE memories(
    id              INTEGER PRIMARY KEY,
    kind            TEXT NOT NULL CHECK (kind IN ({_KINDS})),
    text            TEXT NOT NULL CHECK (length(text) > 0),
    summary         TEXT,
    compressed      TEXT,
    index_label     TEXT,
    scope           TEXT NOT NULL DEFAULT 'project' CHECK (scope IN ('user','project','system')),
    source          TEXT NOT NULL DEFAULT 'manual',
    source_id       TEXT,
    content_hash    TEXT NOT NULL UNIQUE,
    importance      REAL NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
    confidence      REAL NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
    decay_score     REAL NOT NULL DEFAULT 1.0,
    retrieval_count INTEGER NOT NULL DEFAULT 0,
    citation_count  INTEGER NOT NULL DEFAULT 0,
    ignore_count    INTEGER NOT NULL DEFAULT 0,
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL,
    valid_from      REAL NOT NULL,
    valid_to        REAL,
    last_accessed   REAL,
    supersedes      INTEGER REFERENCES memories(id) ON DELETE SET NULL,
    superseded_by   INTEGER REFERENCES memories(id) ON DELETE SET NULL,
    archived        INTEGER NOT NULL DEFAULT 0 CHECK (archived IN (0, 1)),
    archived_at     REAL,
    archive_reason  TEXT,
    fact_key        TEXT,
    fact_value      TEXT,
    metadata        TEXT NOT NULL DEFAULT '{{}}' CHECK (json_valid(metadata))
);
CREATE INDEX memories_kind ON memories(kind) WHERE archived = 0;
CREATE INDEX memories_source ON memories(source, source_id);
CREATE INDEX memories_valid ON memories(valid_from, valid_to);
CREATE INDEX memories_fact_key ON memories(fact_key) WHERE fact_key IS NOT NULL;
CREATE INDEX memories_superseded_by ON memories(superseded_by) WHERE superseded_by IS NOT NULL;

CREATE TABLE anchors(
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    type      TEXT NOT NULL CHECK (type IN ('file','module','symbol','branch','error','tag')),
    value     TEXT NOT NULL,
    PRIMARY KEY (memory_id, type, value)
) WITHOUT ROWID;
CREATE INDEX anchors_lookup ON anchors(type, value, memory_id);

CREATE TABLE artifacts(
    id        INTEGER PRIMARY KEY,
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    type      TEXT NOT NULL,
    ref       TEXT NOT NULL,
    title     TEXT,
    UNIQUE (memory_id, type, ref)
);
CREATE INDEX artifacts_ref ON artifacts(type, ref);

CREATE TABLE edges(
    id         INTEGER PRIMARY KEY,
    source_id  INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    target_id  INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    type       TEXT NOT NULL CHECK (type IN ({_EDGE_TYPES})),
    strength   REAL NOT NULL DEFAULT 1.0 CHECK (strength BETWEEN 0 AND 1),
    reverse    INTEGER NOT NULL DEFAULT 0 CHECK (reverse IN (0, 1)),
    created_at REAL NOT NULL,
    metadata   TEXT NOT NULL DEFAULT '{{}}' CHECK (json_valid(metadata)),
    CHECK (source_id != target_id),
    UNIQUE (source_id, target_id, type)
);
CREATE INDEX edges_target ON edges(target_id, type);

CREATE TABLE contradictions(
    id          INTEGER PRIMARY KEY,
    memory_a    INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    memory_b    INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    status      TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open','resolved','dismissed')),
    resolution  TEXT CHECK (resolution IN ('a_wins','b_wins','both_valid','merged')),
    note        TEXT,
    reason      TEXT,
    confidence  REAL NOT NULL DEFAULT 0.5,
    detected_at REAL NOT NULL,
    resolved_at REAL,
    CHECK (memory_a < memory_b),
    UNIQUE (memory_a, memory_b)
);
CREATE INDEX contradictions_open ON contradictions(status, memory_a, memory_b);

CREATE TABLE access_log(
    id        INTEGER PRIMARY KEY,
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    at        REAL NOT NULL,
    kind      TEXT NOT NULL CHECK (kind IN ('retrieval','citation','ignore','view')),
    context   TEXT
);
CREATE INDEX access_log_memory ON access_log(memory_id, at);

CREATE TABLE categories(
    id                 INTEGER PRIMARY KEY,
    name               TEXT NOT NULL UNIQUE,
    parent_id          INTEGER REFERENCES categories(id) ON DELETE SET NULL,
    description        TEXT,
    summary            TEXT,
    summary_updated_at REAL,
    created_at         REAL NOT NULL
);
CREATE TABLE category_members(
    category_id INTEGER NOT NULL REFERENCES categories(id) ON DELETE CASCADE,
    memory_id   INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    added_at    REAL NOT NULL,
    PRIMARY KEY (category_id, memory_id)
) WITHOUT ROWID;
CREATE INDEX category_members_memory ON category_members(memory_id);

CREATE TABLE sessions(
    id          INTEGER PRIMARY KEY,
    source_tool TEXT NOT NULL,
    external_id TEXT NOT NULL,
    workspace   TEXT,
    title       TEXT,
    started_at  REAL,
    ended_at    REAL,
    summary     TEXT,
    embedding   BLOB,
    model_id    TEXT,
    metadata    TEXT NOT NULL DEFAULT '{{}}' CHECK (json_valid(metadata)),
    UNIQUE (source_tool, external_id)
);
CREATE TABLE messages(
    id         INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    idx        INTEGER NOT NULL,
    role       TEXT NOT NULL,
    text       TEXT NOT NULL,
    at         REAL,
    embedding  BLOB,
    model_id   TEXT,
    metadata   TEXT NOT NULL DEFAULT '{{}}' CHECK (json_valid(metadata)),
    UNIQUE (session_id, idx)
);
CREATE TABLE session_memories(
    session_id  INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    memory_id   INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    message_idx INTEGER,
    PRIMARY KEY (session_id, memory_id)
) WITHOUT ROWID;

-- Vectors: float32 little-endian BLOBs, one per memory, with the model that made them.
-- gen = the vector_generation that wrote the row (lets an index catch up incrementally).
CREATE TABLE embeddings(
    memory_id  INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
    model_id   TEXT NOT NULL,
    dim        INTEGER NOT NULL,
    vector     BLOB NOT NULL CHECK (length(vector) = dim * 4),
    gen        INTEGER NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX embeddings_gen ON embeddings(model_id, gen);

-- Keyword index over the levels, anchors and tags; rowid = memories.id.
-- ``terms`` holds identifier splits (camelCase, snake_case, paths) so code words match prose.
CREATE VIRTUAL TABLE memories_fts USING fts5(
    text, summary, compressed, index_label, anchors, tags, terms,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
"""

# v2: keyword search over conversations (session-first retrieval), ingestion cursors, and
# ``glob`` anchors (a rule for ``src/api/**`` belongs to those files).
_V2 = """
CREATE TABLE anchors_v2(
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    type      TEXT NOT NULL
              CHECK (type IN ('file','module','symbol','branch','error','tag','glob')),
    value     TEXT NOT NULL,
    PRIMARY KEY (memory_id, type, value)
) WITHOUT ROWID;
INSERT INTO anchors_v2(memory_id, type, value) SELECT memory_id, type, value FROM anchors;
DROP TABLE anchors;
ALTER TABLE anchors_v2 RENAME TO anchors;
CREATE INDEX anchors_lookup ON anchors(type, value, memory_id);

CREATE VIRTUAL TABLE messages_fts USING fts5(
    text, terms,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
-- body: every message of the session, so a session is found by what was said in it too.
CREATE VIRTUAL TABLE sessions_fts USING fts5(
    title, summary, terms, body,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE INDEX messages_pending ON messages(model_id);
CREATE INDEX sessions_started ON sessions(started_at);

-- Moves with every write to sessions or messages (their vector cache is keyed on it).
INSERT INTO meta(key, value) VALUES ('session_generation', '0');

-- Where each ingestion source got to (last commit, file fingerprints…), so re-runs are
-- incremental and idempotent.
CREATE TABLE ingest_state(
    source     TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (source, key)
) WITHOUT ROWID;
"""

# v3: passages of conversation messages, the units that search ranks and embeds
# (storage.passages); filled for earlier messages by ``SessionStore.ensure_passages``.
_V3 = """
CREATE TABLE passages(
    id         INTEGER PRIMARY KEY,
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    ord        INTEGER NOT NULL,
    start      INTEGER NOT NULL,
    text       TEXT NOT NULL,
    embedding  BLOB,
    model_id   TEXT,
    UNIQUE (message_id, ord)
);
CREATE INDEX passages_session ON passages(session_id);
CREATE INDEX passages_pending ON passages(model_id);
CREATE VIRTUAL TABLE passages_fts USING fts5(
    text, terms,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
"""

# v4: which compressor made the stored short forms (compressed line, index label). A store
# that already holds memories got them from format 1 (labels such as "adr: upon"); the
# engine clears those once and makes them again (predictive.compress.reset_stale_levels). A
# new store starts at the current format 2.
_V4 = """
INSERT OR REPLACE INTO ingest_state(source, key, value, updated_at)
SELECT 'levels', 'format', CASE WHEN EXISTS (SELECT 1 FROM memories) THEN '1' ELSE '2' END, 0;
"""

# v5: locked contexts (seed 000): a named piece of context an agent pinned, kept in versions;
# locking again under the same name adds a version and keeps the old ones.
_V5 = """
CREATE TABLE locked_contexts(
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    version    INTEGER NOT NULL CHECK (version >= 1),
    content    TEXT NOT NULL CHECK (length(content) > 0),
    preview    TEXT NOT NULL,
    tags       TEXT NOT NULL DEFAULT '[]',
    memory_ids TEXT NOT NULL DEFAULT '[]',
    note       TEXT,
    source     TEXT NOT NULL DEFAULT 'mcp',
    created_at REAL NOT NULL,
    UNIQUE (name, version)
);
"""

# v6: derived categories know where they came from and what their summary was made of (a
# fingerprint of the members, so only changed categories are summarised again); answers of a
# configured LLM are cached by model + prompt hash, and its use is counted per day and model
# (token and cost budgets).
_V6 = """
ALTER TABLE categories ADD COLUMN origin TEXT NOT NULL DEFAULT 'manual'
    CHECK (origin IN ('manual','area','tag'));
ALTER TABLE categories ADD COLUMN fingerprint TEXT;
CREATE INDEX categories_parent ON categories(parent_id);

CREATE TABLE llm_cache(
    key        TEXT PRIMARY KEY,
    model      TEXT NOT NULL,
    purpose    TEXT NOT NULL,
    answer     TEXT NOT NULL,
    created_at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE llm_usage(
    day               TEXT NOT NULL,
    model             TEXT NOT NULL,
    calls             INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost              REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (day, model)
) WITHOUT ROWID;
"""

# v7: a contradiction can be ``suspected``: a weak finding of the local rules (a value, a
# preference, a change or a polarity read from two texts) waits in the review list and is
# never shown in a context until the user confirms it. The status CHECK is part of the
# table, so the table is rebuilt (data, ids and index kept); open ones whose reason starts
# with a weak type (the prefix ``predictive.conflicts.record`` writes) become suspected
# and lose the CONTRADICTS edge that only an open contradiction carries.
WEAK_REASON_PREFIXES = ("value:", "preference:", "changed:", "polarity:")
_WEAK = " OR ".join(f"reason GLOB '{p}*'" for p in WEAK_REASON_PREFIXES)
_V7 = f"""
CREATE TABLE contradictions_v7(
    id          INTEGER PRIMARY KEY,
    memory_a    INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    memory_b    INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    status      TEXT NOT NULL DEFAULT 'open'
                CHECK (status IN ('open','suspected','resolved','dismissed')),
    resolution  TEXT CHECK (resolution IN ('a_wins','b_wins','both_valid','merged')),
    note        TEXT,
    reason      TEXT,
    confidence  REAL NOT NULL DEFAULT 0.5,
    detected_at REAL NOT NULL,
    resolved_at REAL,
    CHECK (memory_a < memory_b),
    UNIQUE (memory_a, memory_b)
);
INSERT INTO contradictions_v7(id, memory_a, memory_b, status, resolution, note, reason,
                              confidence, detected_at, resolved_at)
SELECT id, memory_a, memory_b, status, resolution, note, reason, confidence, detected_at,
       resolved_at FROM contradictions;
DROP TABLE contradictions;
ALTER TABLE contradictions_v7 RENAME TO contradictions;
CREATE INDEX contradictions_open ON contradictions(status, memory_a, memory_b);

UPDATE contradictions SET status = 'suspected' WHERE status = 'open' AND ({_WEAK});
DELETE FROM edges WHERE type = 'CONTRADICTS' AND EXISTS (
    SELECT 1 FROM contradictions c WHERE c.status = 'suspected'
    AND c.memory_a = min(edges.source_id, edges.target_id)
    AND c.memory_b = max(edges.source_id, edges.target_id)
);
"""

# v8: candidate pairs by subject (shared names, anchors, meaning) that wait for a judge, or
# that one judged; ``texts`` is the two texts' content hashes, so the same texts stored again
# under other ids are the same pair.
_V8 = """
CREATE TABLE conflict_candidates(
    id          INTEGER PRIMARY KEY,
    older       INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    newer       INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    texts       TEXT NOT NULL,
    score       REAL NOT NULL,
    why         TEXT,
    status      TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending','conflict','compatible')),
    reason      TEXT,
    proposed_at REAL NOT NULL,
    judged_at   REAL,
    CHECK (older <> newer),
    UNIQUE (older, newer)
);
CREATE INDEX conflict_candidates_status ON conflict_candidates(status, score);
CREATE INDEX conflict_candidates_texts ON conflict_candidates(texts);
"""

# v9: team memory. ``review``: whether a memory may be shared with the team (``proposed``
# until someone approves it; ``rejected`` never). Memories the user wrote or that come from
# the repository itself are approved; what was extracted from elsewhere (chats, agents, fixes
# seen in the editor) waits for review. ``shared_files``: the files of the shared folder
# (one per memory lineage, under a short stable id) with the memory each one holds now and
# the fingerprint of its bytes when this store last wrote or read it.
_V9 = f"""
ALTER TABLE memories ADD COLUMN review TEXT NOT NULL DEFAULT 'approved'
    CHECK (review IN ('proposed','approved','rejected'));
UPDATE memories SET review = 'proposed' WHERE source NOT IN ({_REVIEWED});
CREATE INDEX memories_proposed ON memories(review, kind) WHERE review != 'approved';

CREATE TABLE shared_files(
    sid         TEXT PRIMARY KEY,
    path        TEXT NOT NULL UNIQUE,
    memory_id   INTEGER REFERENCES memories(id) ON DELETE SET NULL,
    fingerprint TEXT NOT NULL,
    updated_at  REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX shared_files_memory ON shared_files(memory_id);
"""

# v10: what a memory cites in the code (files, symbols, dependencies, commands) and the commit
# it was learned at, so it can be checked against the current tree; and the last verdict of
# that check per memory (current / changed / gone / unknown), valid for one HEAD commit and
# one state of the cited files (``fingerprint``: their modification times). Memories stored
# before v10 have no origin row: they are recorded lazily (predictive.staleness).
_V10 = """
CREATE TABLE citations(
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    type      TEXT NOT NULL CHECK (type IN ('file','symbol','dependency','command')),
    value     TEXT NOT NULL,
    path      TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (memory_id, type, value, path)
) WITHOUT ROWID;
CREATE INDEX citations_value ON citations(type, value);
CREATE TABLE citation_origins(
    memory_id   INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
    commit_sha  TEXT,
    version     INTEGER NOT NULL,
    recorded_at REAL NOT NULL
);
CREATE TABLE staleness(
    memory_id   INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
    head        TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    verdict     TEXT NOT NULL CHECK (verdict IN ('current','changed','gone','unknown')),
    notes       TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(notes)),
    checked_at  REAL NOT NULL
);
CREATE INDEX staleness_verdict ON staleness(verdict, head);
"""

# v11: what filters and recency orderings read of a memory, in an index of its own. Looking many
# memories up by id (every match of a common anchor, the rows a search filters) otherwise reads
# each one's whole row; at 100k memories those no longer stay in SQLite's page cache. Queries
# name it (INDEXED BY): the planner always prefers the table's own key for id lookups.
_V11 = """
CREATE INDEX memories_lookup ON memories(id, archived, created_at, valid_from, valid_to);
"""

# v12: the items of rule sections (storage.pieces), each searched on its own and counted for
# the memory it came from; filled from the memories by ``pieces.sync``.
_V12 = """
CREATE TABLE memory_pieces(
    id        INTEGER PRIMARY KEY,
    memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    ord       INTEGER NOT NULL,
    text      TEXT NOT NULL,
    embedding BLOB,
    model_id  TEXT,
    UNIQUE (memory_id, ord)
);
CREATE VIRTUAL TABLE memory_pieces_fts USING fts5(
    text, terms,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
"""

MIGRATIONS: list[str] = [_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8, _V9, _V10, _V11, _V12]
