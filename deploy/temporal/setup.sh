#!/bin/sh
# One-shot job (temporalio/admin-tools image): create the PostgreSQL databases and bring their
# schemas up to date. Idempotent: `create` accepts an existing database, `setup-schema -v 0.0`
# keeps a newer version, `update-schema` applies only what is missing.
#
# Every step is retried (SETUP_ATTEMPTS times, SETUP_RETRY_DELAY_S seconds apart: PostgreSQL
# may still be starting); on failure the job exits 1 with one line saying which step failed and
# why. The server checks the schema version again when it starts.
set -eu
: "${POSTGRES_SEEDS:=postgresql}" "${DB_PORT:=5432}" "${POSTGRES_USER:=temporal}"
: "${POSTGRES_PWD:=temporal}" "${SETUP_ATTEMPTS:=30}" "${SETUP_RETRY_DELAY_S:=2}"
: "${TEMPORAL_SCHEMA_DIR:=/etc/temporal/schema/postgresql/v12}"
# The password by environment, not on the command line (where `ps` would show it).
SQL_PASSWORD=$POSTGRES_PWD
export SQL_PASSWORD

fail() {
  echo "temporal-schema: $*" >&2
  exit 1
}

. "$(dirname "$0")/retry.sh"  # first_line, retry

sql() {
  temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$DB_PORT" \
    -u "$POSTGRES_USER" --db "$db" "$@"
}

command -v temporal-sql-tool >/dev/null || fail "temporal-sql-tool not found (admin-tools image?)"
for pair in temporal:temporal temporal_visibility:visibility; do  # database:schema folder
  db=${pair%%:*}
  versioned=$TEMPORAL_SCHEMA_DIR/${pair#*:}/versioned
  [ -d "$versioned" ] || fail "no schema at $versioned (admin-tools and server versions differ?)"
  retry "creating database $db on $POSTGRES_SEEDS:$DB_PORT" sql create
  retry "setting up schema versioning in $db" sql setup-schema -v 0.0
  retry "updating the schema of $db from $versioned" sql update-schema -d "$versioned"
done
echo "temporal-schema: databases temporal and temporal_visibility up to date"
