#!/bin/sh
# The database layer on one machine (docs/database.md): installs schema veil, stores the
# development client's credentials, creates examples/db-triggers/customers.sql's table, then shows
# what each database role sees through the read view.
# Needs PostgreSQL 15 with PL/Python (scripts/pg-env.sh start) and veil (npm start) running.
#   PGHOST/PGPORT/PGDATABASE  default 127.0.0.1, 15432 (scripts/pg-env.sh), postgres; PGUSER a superuser
#   VEIL_URL                  default http://127.0.0.1:8080; VEIL_DATA_DIR default .veil (the dev client's secret)
set -eu
cd "$(dirname "$0")/../.."
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-15432}" PGDATABASE="${PGDATABASE:-postgres}" PGUSER="${PGUSER:-postgres}"
DB_URL="postgres://$PGUSER@$PGHOST:$PGPORT/$PGDATABASE"
VEIL_URL="${VEIL_URL:-http://127.0.0.1:8080}"

bin/veil db install --apply --database-url "$DB_URL"
bin/veil db configure --database-url "$DB_URL" --veil-url "$VEIL_URL" --client-id veil-dev \
  --client-secret-file "${VEIL_DATA_DIR:-.veil}/dev-client.secret" --protect-role ingest
psql -X -q -f examples/db-triggers/customers.sql

for reader in fraud_analyst support_agent; do
  echo "== $reader reads customers_clear:"
  psql -X -q -U "$reader" -c 'SELECT id, email, name, card_number, city FROM customers_clear ORDER BY id'
done
echo "== reporting reads customers (protected values; it is not mapped to a veil role):"
psql -X -q -U reporting -c 'SELECT id, email, name, card_number, city FROM customers ORDER BY id'
echo "== reporting may not call veil:"
psql -X -q -U reporting -c "SELECT veil.unprotect('Customer', 'email', email) FROM customers" 2>&1 || true
