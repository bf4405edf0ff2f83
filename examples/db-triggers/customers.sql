-- examples/db-triggers/customers.sql: a customers table whose personal columns veil protects in
-- the database, whatever client writes to it. Run after `veil db install` and `veil db configure`
-- (run.sh does all three), as a superuser or the owner of the table.
\set ON_ERROR_STOP on
SET client_min_messages = warning;

-- login roles: a writer, two readers mapped to veil roles, and a reader that is not mapped
DO $$
DECLARE r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['app_writer', 'support_agent', 'fraud_analyst', 'reporting'] LOOP
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN EXECUTE format('CREATE ROLE %I LOGIN', r); END IF;
  END LOOP;
END $$;

\o /dev/null
DROP VIEW IF EXISTS customers_clear;
DROP TABLE IF EXISTS customers;
CREATE TABLE customers (
  id bigserial PRIMARY KEY,
  email text NOT NULL,
  name text,
  card_number text,
  city text
);

-- one BEFORE INSERT OR UPDATE row trigger (zz_veil_protect) protects the mapped columns, in one
-- call to veil per row; the columns' class.property names come from veil's configuration
SELECT veil.attach('customers', 'email', 'Customer', 'email');
SELECT veil.attach('customers', 'name', 'Customer', 'name');
SELECT veil.attach('customers', 'card_number', 'Customer', 'cardNumber');
-- the writer may INSERT and UPDATE (veil db grant-writer): no veil function, and its failing
-- statements are never copied into the server log
SELECT veil.grant_writer('app_writer', 'customers');
GRANT USAGE ON SEQUENCE customers_id_seq TO app_writer;

-- who sees what (veil db grant-reader): support may unprotect emails only, fraud everything. The
-- read view runs with the reader's privileges, so a reader needs SELECT on the table too (its
-- row-level security and column privileges hold). reporting is not mapped: it reads the table's
-- protected values and may call no veil function.
SELECT veil.create_read_view('customers', 'customers_clear');
SELECT veil.grant_reader('support_agent', 'support', 'customers', 'customers_clear');
SELECT veil.grant_reader('fraud_analyst', 'fraud', 'customers', 'customers_clear');
GRANT SELECT ON customers TO reporting;
\o

-- the application writes cleartext; the table stores protected values
SET ROLE app_writer;
INSERT INTO customers (email, name, card_number, city) VALUES
  ('alice@example.com', 'Alice Liddell', '4111-1111-1111-1111', 'Oxford'),
  ('bob@example.com', NULL, '5500 0000 0000 0004', 'Rome');
RESET ROLE;

\echo '== the table customers holds:'
SELECT id, email, name, card_number, city FROM customers ORDER BY id;

-- set-based use of the array variants, e.g. looking rows up by a deterministic protected email
\echo '== rows found by protected email (veil.protect_many):'
SELECT id, city FROM customers
WHERE email = ANY (veil.protect_many('Customer', 'email', ARRAY['alice@example.com', 'nobody@example.com']));
