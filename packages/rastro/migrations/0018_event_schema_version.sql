-- The version of its type's data an event was appended at (the `version` of its type in
-- defineEvents). Reads bring older versions to the current one through the type's upcasters; the
-- stored data never changes. Events stored before versions existed are version 1. With a constant
-- default, PostgreSQL adds the column without rewriting the table.
alter table events add column schema_version smallint not null default 1;
