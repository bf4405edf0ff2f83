# veil's table administration inside PostgreSQL (PL/Python): attach the protecting trigger to a
# table's mapped columns, and generate read views that unprotect them.
#
# The mapping of a table lives in one place, the arguments of its trigger zz_veil_protect
# ((column, class, property) triples): pg_dump keeps it, dropping the table drops it, and nothing
# can disagree with what the trigger does. The column naming each row's data subject (keys scoped
# to the subject, issue 29) is one more triple there, (column, SUBJECT_MARK, ''): no veil class
# can be named SUBJECT_MARK (NAME), so it never reads as a field. These functions run as their
# caller (SECURITY INVOKER), so only a role that may create triggers on the table (its owner) can
# attach them.
import re

TRIGGER = 'zz_veil_protect'
# raises at the end of the statement what the row trigger deferred (veil_trigger.py)
CHECK_TRIGGER = 'zz_veil_check'
NAME = re.compile(r'^[A-Za-z][A-Za-z0-9_-]{0,63}$')
# the class slot of the subject column's triple (veil_trigger.py reads the same)
SUBJECT_MARK = '@subject'
# subject columns: types whose text form is the same in the trigger (PL/Python's str) and in a
# read view (::text), so a row's subject reads back as it was written
SUBJECT_TYPES = ('pg_catalog.text', 'pg_catalog.varchar', 'pg_catalog.uuid', 'pg_catalog.int2', 'pg_catalog.int4', 'pg_catalog.int8')


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
            'a.atttypid IN (' + ', '.join('\'%s\'::pg_catalog.regtype' % t for t in SUBJECT_TYPES) + ') AS subjecty, '
            'pg_catalog.format_type(a.atttypid, a.atttypmod) AS type FROM pg_catalog.pg_attribute a '
            'WHERE a.attrelid = $1::pg_catalog.regclass AND a.attname = $2 AND a.attnum > 0 AND NOT a.attisdropped',
            ['text', 'name'])
        self.columns_plan = plpy.prepare(
            'SELECT a.attname FROM pg_catalog.pg_attribute a WHERE a.attrelid = $1::pg_catalog.regclass '
            'AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum', ['text'])
        self.relation_plan = plpy.prepare(
            'SELECT c.relkind, n.nspname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace '
            'WHERE c.oid = $1::pg_catalog.regclass', ['text'])

    def triples(self, table):
        rows = self.plpy.execute(self.args_plan, [table, TRIGGER])
        if len(rows) == 0:
            return []
        raw = rows[0]['tgargs']
        args = [a.decode('utf-8') for a in bytes(raw).split(b'\x00')[:-1]]
        return [(args[i], args[i + 1], args[i + 2]) for i in range(0, len(args) - 2, 3)]

    def mapping(self, table):
        """The protected columns: (column, class, property)."""
        return [t for t in self.triples(table) if t[1] != SUBJECT_MARK]

    def subject_column(self, table):
        """The column naming each row's data subject, or None."""
        return next((t[0] for t in self.triples(table) if t[1] == SUBJECT_MARK), None)

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
        subject = self.subject_column(table)
        if column == subject:
            fail(self.plpy, 'the column names the rows\' data subject: it cannot be protected (veil.detach_subject first)', '22023',
                 'the subject id must stay readable to find the subject\'s key; use a surrogate id (a customer number), not personal data')
        mapping = [m for m in self.mapping(table) if m[0] != column] + [(column, class_name, property_name)]
        self.install(table, mapping, subject)

    def detach(self, table, column):
        self.relation(table)
        self.install(table, [m for m in self.mapping(table) if m[0] != column], self.subject_column(table))

    def attach_subject(self, table, column):
        """Names the column holding each row's data subject: the trigger sends it with the row's values."""
        self.relation(table)
        mapping = self.mapping(table)
        if not mapping:
            fail(self.plpy, 'the table has no protected columns; attach some first with veil.attach', '55000')
        found = self.plpy.execute(self.column_plan, [table, column])
        if len(found) == 0:
            fail(self.plpy, 'the table has no column of that name', '42703')
        if not found[0]['subjecty']:
            fail(self.plpy, 'a subject column must be text, varchar, uuid or an integer; the column is ' + found[0]['type'], '42804')
        if any(m[0] == column for m in mapping):
            fail(self.plpy, 'the column is protected: a subject column must stay readable (veil.detach it, or name another column)', '22023',
                 'the subject id must stay readable to find the subject\'s key; use a surrogate id (a customer number), not personal data')
        self.install(table, mapping, column)

    def detach_subject(self, table):
        self.relation(table)
        self.install(table, self.mapping(table), None)

    def install(self, table, mapping, subject=None):
        q = self.plpy.quote_literal
        for name in (TRIGGER, CHECK_TRIGGER):
            if len(self.plpy.execute(self.args_plan, [table, name])) > 0:
                self.plpy.execute('DROP TRIGGER ' + name + ' ON ' + table)
        # no protected column, no trigger: the subject column goes with the last of them
        if not mapping:
            return
        triples = ([(subject, SUBJECT_MARK, '')] if subject is not None else []) + list(mapping)
        args = ', '.join(q(part) for m in triples for part in m)
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
        # a table naming its rows' data subject: each row's values are unprotected with its subject
        subject = self.subject_column(table)
        subject_arg = ', t.' + ident(subject) + '::pg_catalog.text' if subject is not None else ''
        view = ident(view_schema or relation['nspname']) + '.' + ident(view_name)
        # veil.reveal is VOLATILE, so the planner keeps the lateral subquery: one call per row
        # for all its protected columns. security_invoker: the reader's own privileges apply to
        # the table, so its row-level security policies and column privileges hold in the view
        # (an ordinary view would read the table as the view's owner, the installer).
        self.plpy.execute(
            'CREATE OR REPLACE VIEW ' + view + ' WITH (security_invoker = true) AS SELECT ' + ', '.join(select) + ' FROM ' + table + ' t'
            ' CROSS JOIN LATERAL (SELECT veil.reveal(ARRAY[' + classes + ']::text[], ARRAY[' + properties + ']::text[], ARRAY['
            + values + ']::text[]' + subject_arg + ') AS v) r')
        return view
