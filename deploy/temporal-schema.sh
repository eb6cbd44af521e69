#!/bin/sh
# One-shot schema setup of docker-compose.yml (`temporal-schema` service, temporalio/admin-tools image):
# the Temporal persistence and visibility databases on PostgreSQL, created if missing and upgraded to
# the schema the image's SQL tool embeds. Safe to run on every `docker compose up`.
set -eu
sql() {
  db="$1"
  shift
  temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$DB_PORT" -u "$POSTGRES_USER" --pw "$POSTGRES_PWD" --db "$db" "$@"
}
for pair in temporal:postgresql/v12/temporal temporal_visibility:postgresql/v12/visibility; do
  db="${pair%%:*}"
  schema="${pair#*:}"
  sql "$db" create-database || echo "database $db exists"
  sql "$db" setup-schema -v 0.0
  sql "$db" update-schema --schema-name "$schema"
done
