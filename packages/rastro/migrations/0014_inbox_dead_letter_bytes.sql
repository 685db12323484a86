-- A dead letter keeps the message body byte for byte: a body the inbox could not store may hold
-- bytes a `text` column refuses (0x00) or that are not UTF-8 at all, and the dead letter must be
-- written whatever the bytes are.
alter table inbox_dead_letters alter column body type bytea using convert_to(body, 'UTF8');
