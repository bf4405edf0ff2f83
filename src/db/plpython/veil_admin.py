# veil's table administration inside PostgreSQL (PL/Python): attach the protecting trigger to a
# table's mapped columns, and generate read views that unprotect them.
#
# The mapping of a table lives in one place, the arguments of its trigger zz_veil_protect
# ((column, class, property) triples): pg_dump keeps it, dropping the table drops it, and nothing
# can disagree with what the trigger does. These functions run as their caller (SECURITY
# INVOKER), so only a role that may create triggers on the table (its owner) can attach them.
import re

TRIGGER = 'zz_veil_protect'
# raises at the end of the statement what the row trigger deferred (veil_trigger.py)
CHECK_TRIGGER = 'zz_veil_check'
NAME = re.compile(r'^[A-Za-z][A-Za-z0-9_-]{0,63}$')


def fail(plpy, message, sqlstate, hint=None):
    plpy.error('veil: ' + message, hint=hint, sqlstate=sqlstate)


class Admin(object):
    def __init__(self, plpy):
        self.plpy = plpy
        self.args_plan = plpy.prepare(
            'SELECT t.tgargs FROM pg_catalog.pg_trigger t WHERE t.tgrelid = $1::pg_catalog.regclass AND t.tgname = $2',
            ['text', 'name'])
        self.column_plan = plpy.prepare(
            'SELECT a.atttypid IN (\'pg_catalog.text\'::pg_catalog.regtype, \'pg_catalog.varchar\'::pg_catalog.regtype) AS texty, '
            'pg_catalog.format_type(a.atttypid, a.atttypmod) AS type FROM pg_catalog.pg_attribute a '
            'WHERE a.attrelid = $1::pg_catalog.regclass AND a.attname = $2 AND a.attnum > 0 AND NOT a.attisdropped',
            ['text', 'name'])
        self.columns_plan = plpy.prepare(
            'SELECT a.attname FROM pg_catalog.pg_attribute a WHERE a.attrelid = $1::pg_catalog.regclass '
            'AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum', ['text'])
        self.relation_plan = plpy.prepare(
            'SELECT c.relkind, n.nspname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace '
            'WHERE c.oid = $1::pg_catalog.regclass', ['text'])

    def mapping(self, table):
        rows = self.plpy.execute(self.args_plan, [table, TRIGGER])
        if len(rows) == 0:
            return []
        raw = rows[0]['tgargs']
        args = [a.decode('utf-8') for a in bytes(raw).split(b'\x00')[:-1]]
        return [(args[i], args[i + 1], args[i + 2]) for i in range(0, len(args) - 2, 3)]

    def relation(self, table):
        row = self.plpy.execute(self.relation_plan, [table])[0]
        if row['relkind'] not in ('r', 'p'):
            fail(self.plpy, 'only tables can have protected columns', '42809')
        return row

    def attach(self, table, column, class_name, property_name):
        self.relation(table)
        if not NAME.match(class_name or '') or not NAME.match(property_name or ''):
            fail(self.plpy, 'class and property must be veil names (a letter, then up to 63 letters, digits, _ or -)', '22023')
        found = self.plpy.execute(self.column_plan, [table, column])
        if len(found) == 0:
            fail(self.plpy, 'the table has no column of that name', '42703')
        if not found[0]['texty']:
            fail(self.plpy, 'a protected column must be text or varchar; the column is ' + found[0]['type'], '42804',
                 'veil stores protected values as strings: ALTER TABLE ... ALTER COLUMN ... TYPE text')
        mapping = [m for m in self.mapping(table) if m[0] != column] + [(column, class_name, property_name)]
        self.install(table, mapping)

    def detach(self, table, column):
        self.relation(table)
        self.install(table, [m for m in self.mapping(table) if m[0] != column])

    def install(self, table, mapping):
        q = self.plpy.quote_literal
        for name in (TRIGGER, CHECK_TRIGGER):
            if len(self.plpy.execute(self.args_plan, [table, name])) > 0:
                self.plpy.execute('DROP TRIGGER ' + name + ' ON ' + table)
        if not mapping:
            return
        args = ', '.join(q(part) for m in mapping for part in m)
        # BEFORE ... FOR EACH ROW: the row is rewritten before it is written, so cleartext never
        # reaches the heap or the WAL. The name sorts after ordinary names: PostgreSQL fires
        # triggers of one kind in name order, and this one must see the row last.
        self.plpy.execute('CREATE TRIGGER ' + TRIGGER + ' BEFORE INSERT OR UPDATE ON ' + table +
                          ' FOR EACH ROW EXECUTE FUNCTION veil.protect_row(' + args + ')')
        self.plpy.execute('CREATE TRIGGER ' + CHECK_TRIGGER + ' AFTER INSERT OR UPDATE ON ' + table +
                          ' FOR EACH STATEMENT EXECUTE FUNCTION veil.check_statement()')

    def create_read_view(self, table, view_name, view_schema):
        relation = self.relation(table)
        mapping = self.mapping(table)
        if not mapping:
            fail(self.plpy, 'the table has no protected columns; attach some first with veil.attach', '55000')
        ident = self.plpy.quote_ident
        lit = self.plpy.quote_literal
        index = dict((m[0], i + 1) for i, m in enumerate(mapping))
        select = []
        for row in self.plpy.execute(self.columns_plan, [table]):
            name = row['attname']
            if name in index:
                select.append('r.v[%d] AS %s' % (index[name], ident(name)))
            else:
                select.append('t.' + ident(name))
        classes = ', '.join(lit(m[1]) for m in mapping)
        properties = ', '.join(lit(m[2]) for m in mapping)
        values = ', '.join('t.' + ident(m[0]) for m in mapping)
        view = ident(view_schema or relation['nspname']) + '.' + ident(view_name)
        # veil.reveal is VOLATILE, so the planner keeps the lateral subquery: one call per row
        # for all its protected columns. security_invoker: the reader's own privileges apply to
        # the table, so its row-level security policies and column privileges hold in the view
        # (an ordinary view would read the table as the view's owner, the installer).
        self.plpy.execute(
            'CREATE OR REPLACE VIEW ' + view + ' WITH (security_invoker = true) AS SELECT ' + ', '.join(select) + ' FROM ' + table + ' t'
            ' CROSS JOIN LATERAL (SELECT veil.reveal(ARRAY[' + classes + ']::text[], ARRAY[' + properties + ']::text[], ARRAY['
            + values + ']::text[]) AS v) r')
        return view
