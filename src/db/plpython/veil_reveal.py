# What veil's read views call inside PostgreSQL: veil.reveal (docs/database.md, "How it behaves").
#
# `veil db install` embeds this file before veil_client.py in one module; Client inherits Reveal
# and supplies transform, mapped_role, statement_key, plpy and the refusal cache. A read view
# shows each value as the reader's veil role may see it: cleartext; the stored (protected) value
# where veil refuses the role the field; NULL where the value's data subject was erased (issue 29:
# nobody can unprotect it again, so neither the stored value nor anything else stands in for it),
# with one NOTICE SUBJECT_ERASED per statement. Anything else fails the statement, as before.
import time

# refusals that a read view turns into "keep the protected value" (the caller may not see it)
REFUSALS = frozenset(['ACTION_NOT_GRANTED', 'RIGHTS_CONTEXT_UNMATCHED', 'ROLE_NOT_HELD'])
# what a read view turns into NULL: the value's data subject was erased, nobody can read it again
ERASED = 'SUBJECT_ERASED'


class Reveal(object):
    def reveal(self, classes, properties, values, subject=None):
        """For read views: cleartext where the caller's veil role may see it, else the stored value;
        NULL for a value whose data subject (the row's, `subject`) was erased."""
        if values is None:
            return None
        if classes is None or properties is None or len(classes) != len(values) or len(properties) != len(values):
            raise VeilFailure('DB_ARGUMENT_INVALID', 400, 'classes, properties and values must be arrays of one length')
        out = list(values)
        role = self.mapped_role()
        if role is None:
            return out
        now = time.monotonic()
        pending = [i for i, v in enumerate(values)
                   if v is not None and self.refused.get((role, classes[i], properties[i]), 0) <= now]
        while pending:
            try:
                results = self.transform('Unprotect', role, [(classes[i], properties[i], values[i], subject) for i in pending], 'veil.reveal')
            except VeilFailure as failure:
                pending = self.reveal_failed(failure, role, classes, properties, pending, out, now)
                continue
            for i, value in zip(pending, results):
                out[i] = value
            return out
        return out

    def reveal_failed(self, failure, role, classes, properties, pending, out, now):
        """What a read view makes of a failed call: the values left to ask for again, or raises."""
        if failure.only(ERASED):
            # erased for good: NULL, never the stored value (nobody can read it again) nor garbage
            erased = set(pending[k] for k in failure.instances if k < len(pending))
            if not erased:
                raise failure
            for i in erased:
                out[i] = None
            self.erased_notice(classes[min(erased)] + '.' + properties[min(erased)])
            return [i for i in pending if i not in erased]
        if failure.code not in REFUSALS:
            raise failure
        refused = set(pending[k] for k in failure.instances if k < len(pending))
        if not refused:
            refused = set(pending)  # the whole call is refused: every value stays protected
        for i in refused:
            self.refused[(role, classes[i], properties[i])] = now + 60.0
        return [i for i in pending if i not in refused]

    def erased_notice(self, field):
        """One NOTICE per statement that read values of erased subjects as NULL (names only)."""
        key = self.statement_key()
        if self.erased_noticed == key:
            return
        self.erased_noticed = key
        self.plpy.notice('veil: SUBJECT_ERASED: values of erased data subjects read as NULL (' + field + ')',
                         detail='veil code SUBJECT_ERASED, status 422, retriable no',
                         hint='the data subject was erased (crypto-shredding): its values can no longer be unprotected')
