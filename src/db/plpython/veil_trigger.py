# veil's row trigger inside PostgreSQL: what veil.protect_row and veil.check_statement run.
#
# `veil db install` embeds this file with veil_guard.py and veil_client.py in one module; Client
# (veil_client.py) inherits these methods and supplies transform, settings, the plans and state.
#
# - BEFORE INSERT OR UPDATE ... FOR EACH ROW (protect_row): the row's mapped values are protected
#   in one call before the row is written, so neither the heap nor the WAL sees cleartext.
# - A failure is not raised inside the row trigger: under COPY, PostgreSQL's error context quotes
#   the input line (cleartext) in the error's CONTEXT, to the client and the server log. The row
#   is skipped, later rows are skipped without calling veil, and the AFTER ... FOR EACH STATEMENT
#   trigger (check_statement) raises the failure once the statement's rows are done.
# - An upsert (INSERT ... ON CONFLICT DO UPDATE SET c = EXCLUDED.c) fires the INSERT trigger, then
#   at once the UPDATE trigger with the values it just protected: those are kept as they are. A
#   value is recognised only by equality with what this trigger produced for that row and column,
#   so a caller cannot pass off a cleartext of its own as protected.
# - A table that names its rows' data subject (veil.attach_subject: a (column, '@subject', '')
#   triple among the arguments) sends each row's values with that row's subject, so veil protects
#   them under the subject's own key. A row with values to protect and a NULL subject is refused
#   (SUBJECT_REQUIRED), never protected under a shared key; so is an UPDATE that moves a row to
#   another subject while a protected value stays as stored (it is under the old subject's key).

SUBJECT_MARK = '@subject'


class Trigger(object):
    def protect_row(self, td):
        """BEFORE INSERT OR UPDATE row trigger: its arguments are (column, class, property) triples,
        and (column, '@subject', '') for the subject column."""
        if self.pending is not None:
            if self.pending[0] == self.statement_key():
                return 'SKIP'  # the statement fails at its end anyway: no more calls, no row written
            self.pending = None  # left by a statement that failed otherwise
        try:
            return self.protect_row_now(td)
        except Exception as e:
            failure = e if isinstance(e, VeilFailure) else VeilFailure(
                'INTERNAL', 500, 'unexpected error in veil\'s database client (' + type(e).__name__ + ')')
        self.forget_context()
        # Raising here would run inside COPY's error context, which quotes the input line in the
        # error's CONTEXT (client and server log). Skip the row instead and let check_statement,
        # the AFTER ... FOR EACH STATEMENT trigger veil.attach creates with this one, raise; only
        # where it cannot fire (a table attached by an older veil, a partition) raise at once.
        if not self.plpy.execute(self.check_plan, [td['relid']])[0]['deferrable']:
            raise failure
        self.pending = (self.statement_key(), failure)
        return 'SKIP'

    def protect_row_now(self, td):
        new = td['new']
        old = td['old'] if td['event'] == 'UPDATE' else None
        triples, subject_column = self.mapping_of(td['args'])
        subject = subject_of(new, subject_column)
        # an upsert's DO UPDATE carries the values the INSERT trigger protected a moment ago
        # (EXCLUDED.c): those, and only those, are stored as they are
        produced_subject, produced = self.last_insert.pop(td['relid'], (None, {})) if old is not None else (None, {})
        columns = []
        items = []
        for column, class_name, property_name in triples:
            if class_name == SUBJECT_MARK:
                continue
            value = new.get(column)
            if value is None:
                continue  # NULL stays NULL
            # an UPDATE that leaves the column as stored keeps its protected value
            kept = old is not None and ((old.get(column) == value and subject_of(old, subject_column) == subject)
                                        or (produced.get(column) == value and produced_subject == subject))
            if kept:
                continue
            if old is not None and (old.get(column) == value or produced.get(column) == value):
                raise VeilFailure('DB_ARGUMENT_INVALID', 400, 'the row\'s subject changed while a protected column kept its value '
                                  '(protected under the former subject\'s key): write the column anew, or NULL, in the same UPDATE',
                                  field=class_name + '.' + property_name)
            if not isinstance(value, str):
                raise VeilFailure('DB_ARGUMENT_INVALID', 400, 'a mapped column is not of a text type')
            if subject_column is not None and subject is None:
                raise VeilFailure('SUBJECT_REQUIRED', 422, 'the row\'s subject column is NULL: its values cannot be protected under a subject\'s key',
                                  field=class_name + '.' + property_name)
            columns.append(column)
            items.append((class_name, property_name, value, subject))
        if old is None:
            self.last_insert.pop(td['relid'], None)
        if not items:
            return None
        table = td['table_schema'] + '.' + td['table_name']
        context = self.context()
        s, who = context
        if self.may_lease(s, td['relid']):
            # leased keys (veil_lease.py): the same guard, one record per row, the same failures
            results = self.guard.call('trigger', 'Protect', items, lambda: self.leased_protect(s, s.protect_role, who['db_role'], items), table, who)
        else:
            results = self.transform('Protect', s.protect_role, items, 'trigger', table, context)
        for column, value in zip(columns, results):
            new[column] = value
        if old is None:
            self.last_insert[td['relid']] = (subject, dict(zip(columns, results)))
        return 'MODIFY'

    def mapping_of(self, args):
        """The trigger's (column, class, property) triples and its subject column, read once per argument list."""
        key = tuple(args or ())
        mapping = self.mappings.get(key)
        if mapping is None:
            triples = [(key[i], key[i + 1], key[i + 2]) for i in range(0, len(key) - 2, 3)]
            if len(self.mappings) > 256:
                self.mappings.clear()
            mapping = self.mappings[key] = (triples, next((t[0] for t in triples if t[1] == SUBJECT_MARK), None))
        return mapping

    def check_statement(self, td):
        """AFTER INSERT OR UPDATE ... FOR EACH STATEMENT: raises the failure protect_row deferred."""
        self.last_insert.pop(td['relid'], None)
        # values protected under leased keys are reported now: veil audits them before the
        # statement may commit, and a report veil does not take fails the statement
        reported = None
        try:
            self.report_leases()
        except VeilFailure as f:
            reported = f
        except Exception as e:
            reported = VeilFailure('INTERNAL', 500, 'unexpected error in veil\'s database client (' + type(e).__name__ + ')')
        # the next statement reads the settings again, and the rate lease left goes back to the role
        self.forget_context()
        self.guard.give_back()
        if self.pending is not None:
            key, failure = self.pending
            self.pending = None
            if key == self.statement_key():
                raise failure
        if reported is not None:
            raise reported
        return None

    def statement_key(self):
        return self.plpy.execute(self.key_plan)[0]['k']


def subject_of(row, column):
    """The row's subject id as text (the read view passes column::text, which prints the same), or None."""
    if column is None:
        return None
    value = row.get(column)
    if value is None or isinstance(value, str):
        return value
    return str(value)
