#!/bin/sh
# One-shot job (temporalio/admin-tools image): create the PostgreSQL databases and bring their
# schemas up to date. Idempotent: safe on every `docker compose up`.
set -eu
: "${POSTGRES_SEEDS:=postgresql}" "${POSTGRES_USER:=temporal}" "${POSTGRES_PWD:=temporal}"
SCHEMA=/etc/temporal/schema/postgresql/v12
for db in temporal temporal_visibility; do
  dir=temporal
  [ "$db" = temporal_visibility ] && dir=visibility
  sql() { temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p 5432 \
    -u "$POSTGRES_USER" -pw "$POSTGRES_PWD" --db "$db" "$@"; }
  sql create || true  # exists already on a second run
  sql setup-schema -v 0.0 || true
  sql update-schema -d "$SCHEMA/$dir/versioned"
done
echo "temporal schemas ready"
