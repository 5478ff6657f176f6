#!/bin/sh
# One-shot job (temporalio/admin-tools image): create the PostgreSQL databases and bring their
# schemas up to date. Idempotent: safe on every `docker compose up`.
set -eu
: "${POSTGRES_SEEDS:=postgresql}" "${POSTGRES_USER:=temporal}" "${POSTGRES_PWD:=temporal}"
SCHEMA=/etc/temporal/schema/postgresql/v12
sql() { temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p 5432 \
  -u "$POSTGRES_USER" -pw "$POSTGRES_PWD" --db "$db" "$@"; }
for pair in temporal:temporal temporal_visibility:visibility; do  # database:schema folder
  db=${pair%%:*}
  sql create || true  # exists already on a second run
  sql setup-schema -v 0.0 || true
  sql update-schema -d "$SCHEMA/${pair#*:}/versioned"
done
echo "temporal schemas ready"
