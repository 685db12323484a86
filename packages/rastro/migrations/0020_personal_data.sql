-- Personal data erasable without touching an event (docs/trail.md, "Erasure"). Fields an event
-- type marks as personal are stored encrypted with a key per data subject; the keys live here,
-- each wrapped by the master key (AES-256-GCM). Forgetting a subject deletes its key: its fields
-- can no longer be read, while the events, their hashes and the trail's proofs stay as they were.
create table subject_keys (
  subject text collate "C" primary key,
  wrapped bytea not null,
  created_at timestamptz not null default now()
);

-- Subjects forgotten: their new personal data is refused, so a forgotten id is never reused.
create table forgotten_subjects (
  subject text collate "C" primary key,
  forgotten_at timestamptz not null default now()
);
