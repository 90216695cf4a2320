-- MIC Outbox: adds the column tables_version to a control table created before the schema version was
-- recorded (H2). Idempotent; JdbcOutboxStore.createSchema() runs it when the column is missing, then
-- records the version on the row '#schema' (docs/operations.md, "The schema version").

ALTER TABLE outbox_control ADD COLUMN IF NOT EXISTS tables_version INTEGER;
