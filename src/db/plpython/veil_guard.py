# veil's guard inside PostgreSQL: every call the database makes to veil is rate-limited per
# database role and audited with that role.
#
# `veil db install` embeds this file ahead of veil_client.py in one module (install-sql.ts); the
# Client keeps one Guard. The role is session_user: the functions are SECURITY DEFINER, so
# current_user inside them is the installer, and SET ROLE cannot change session_user, so a login
# cannot spend another role's budget or sign its calls with another name.
#
# Counts and records live in files under the data directory (pg_veil/), not in tables: a row
# written by a call would vanish with the caller's ROLLBACK, taking its count and its record
# with it, and the caller would keep the values it was shown. Files are written as the server's
# OS user, mode 0600, under an exclusive lock, so every backend shares them.
#
# Records hold names and counts, never a value.
import datetime
import fcntl
import json
import os
import time

GUARD_DIR = 'pg_veil'
AUDIT_FILE = 'audit.log'
AUDIT_ROTATE_BYTES = 64 << 20
AUDIT_KEEP = 4
# how often a backend looks whether the audit log grew past its size or was rotated by another
AUDIT_CHECK_SECONDS = 0.1
# values per minute for a role without a row in veil.rate_limits (and no 'public' row)
DEFAULT_PER_MINUTE = 60000
# who calls, in which database, with what budget: the Client reads it with the settings in one query
GUARD_WHO_SQL = ('SELECT session_user::text AS db_role, pg_catalog.current_database()::text AS db, COALESCE('
                 '(SELECT l.values_per_minute FROM veil.rate_limits l WHERE l.db_role = session_user), '
                 '(SELECT l.values_per_minute FROM veil.rate_limits l WHERE l.db_role = \'public\'), '
                 + str(DEFAULT_PER_MINUTE) + ') AS per_minute')


class Guard(object):
    def __init__(self, plpy):
        self.plpy = plpy
        self.who_plan = plpy.prepare(GUARD_WHO_SQL)
        self.root = None
        # kept open for the backend's life: the role's rate file (session_user never changes in a
        # backend), the audit lock and the audit log (reopened when another backend rotated it)
        self.rate_fd = None
        self.rate_path = None
        self.lock_fd = None
        self.audit_fd = None
        self.audit_ino = None
        # the rate lease (take): values claimed ahead from the role's shared bucket
        self.lease = 0
        self.lease_key = None
        self.lease_until = 0.0
        self.lease_next = 0
        # the constant part of ok records' lines, by shape (line_of)
        self.lines = {}
        self.pid = os.getpid()
        self.audit_file = None
        self.audit_checked_until = 0.0

    def who(self):
        return self.plpy.execute(self.who_plan)[0]

    def directory(self):
        if self.root is None:
            data = self.plpy.execute('SELECT pg_catalog.current_setting(\'data_directory\') AS d')[0]['d']
            root = os.path.join(data, GUARD_DIR)
            os.makedirs(os.path.join(root, 'rate'), mode=0o700, exist_ok=True)
            self.root = root
        return self.root

    def call(self, function, action, items, work, table=None, who=None):
        """Runs work() (one call to veil for items) if the role's budget allows; records the outcome.
        who: the who_plan row, when the caller has read it already."""
        row = who if who is not None else self.who()
        # what the record says besides time, pid and outcome: the same for every row of a statement,
        # so an ok record's line is built once per shape (line_of)
        shape = (row['db'], row['db_role'], function, action, tuple([(i[0], i[1]) for i in items]), table)
        try:
            allowed = self.take(row['db_role'], row['per_minute'], len(items))
        except OSError:
            raise VeilFailure('AUDIT_UNAVAILABLE', 503, 'veil\'s rate-limit state in the data directory cannot be written, so the call was refused', retriable=True)
        if not allowed:
            self.record_quietly(event_of(shape, outcome='refused', code='DB_RATE_LIMITED'))
            raise VeilFailure('DB_RATE_LIMITED', 429, 'this database role has used its veil values per minute (veil.rate_limits)', retriable=True)
        try:
            result = work()
        except VeilFailure as f:
            self.record_quietly(event_of(shape, outcome='refused' if f.sqlstate() == '42501' else 'failed', code=f.code))
            raise
        try:
            self.record(shape)
        except OSError:
            # no record, no values
            raise VeilFailure('AUDIT_UNAVAILABLE', 503, 'veil\'s database audit log cannot be written, so the call was refused', retriable=True)
        return result

    # ---- rate limit: a token bucket per role in pg_veil/rate/<role>, leased in growing slices --------

    def take(self, db_role, per_minute, count):
        """True when count values fit the role's budget (then they are spent), else False.

        The shared bucket is a file every backend locks. A backend taking values one row at a time
        claims a slice ahead (the lease) so it does not lock the file for every row: the slice starts
        at nothing and doubles with each claim up to a tenth of a second's budget. Leased values
        are spent from the shared bucket, so the role never exceeds its budget; what a backend did
        not use goes back at the end of its statement (give_back) or when the lease ages (1 s)."""
        now = time.monotonic()
        if self.lease_key == (db_role, per_minute) and now < self.lease_until:
            if self.lease >= count:
                self.lease -= count
                return True
        self.give_back(keep_pace=True)
        ahead = min(self.lease_next, int(per_minute // 600))
        claimed = self.claim(db_role, per_minute, count, ahead)
        if claimed < count:
            return False
        self.lease_key = (db_role, per_minute)
        self.lease = claimed - count
        self.lease_until = now + 1.0
        self.lease_next = max(1, ahead * 2)
        return True

    def give_back(self, keep_pace=False):
        """Returns the unused lease to the shared bucket: at the end of a statement (the next one
        starts claiming small again), or when the lease ran out, aged or changed (keep_pace)."""
        lease, key = self.lease, self.lease_key
        self.lease, self.lease_key = 0, None
        if not keep_pace:
            self.lease_next = 0
        if lease > 0 and key is not None:
            try:
                self.claim(key[0], key[1], -lease, 0)
            except OSError:
                pass  # lost budget: stricter, never looser

    def claim(self, db_role, per_minute, count, ahead):
        """Under the file's lock: takes count (+ up to ahead) values if count fit; returns what it took.
        A negative count gives values back."""
        path = os.path.join(self.directory(), 'rate', db_role.encode('utf-8').hex())
        fd = self.locked_rate_file(path)
        try:
            now = time.time()
            capacity = float(per_minute)
            try:
                tokens, last = [float(x) for x in os.pread(fd, 64, 0).decode('ascii').split()]
            except ValueError:
                tokens, last = capacity, now
            tokens = min(capacity, tokens + max(0.0, now - last) * capacity / 60.0)
            taken = 0
            if count < 0:
                tokens = min(capacity, tokens - count)
            elif count <= tokens:
                taken = count + max(0, min(ahead, int(tokens) - count))
                tokens -= taken
            os.pwrite(fd, ('%.6f %.6f' % (tokens, now)).encode('ascii').ljust(64), 0)
            return taken
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def locked_rate_file(self, path):
        """The role's rate file, open and locked; reopened if it was removed meanwhile."""
        for _ in (0, 1):
            if self.rate_fd is None or self.rate_path != path:
                self.close_rate_file()
                self.rate_fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                self.rate_path = path
            fcntl.flock(self.rate_fd, fcntl.LOCK_EX)
            if os.fstat(self.rate_fd).st_nlink > 0:
                return self.rate_fd
            self.close_rate_file()  # removed (pg_veil/rate cleared): the shared state is the new file
        raise OSError('the rate file keeps disappearing')

    def close_rate_file(self):
        if self.rate_fd is not None:
            os.close(self.rate_fd)
        self.rate_fd = None

    # ---- audit: one JSON line per call in pg_veil/audit.log -------------------------------------------

    def line_of(self, record):
        """The record as one line: an ok call's shape (call), or a refusal's event. The part after time
        and pid is the same for every row of a statement, so it is built once."""
        tail = self.lines.get(record) if isinstance(record, tuple) else None
        if tail is None:
            event = event_of(record, outcome='ok') if isinstance(record, tuple) else record
            body = dict((k, v) for k, v in event.items() if k not in ('time', 'pid'))
            tail = json.dumps(body, separators=(',', ':'), ensure_ascii=True)[1:]
            if isinstance(record, tuple):
                if len(self.lines) > 256:
                    self.lines.clear()
                self.lines[record] = tail
        stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='milliseconds')
        return ('{"time":"' + stamp + '","pid":' + str(self.pid) + ',' + tail + '\n').encode('ascii')

    def record(self, record):
        """Appends the record. O_APPEND writes of one line do not interleave, so only rotating (and
        reopening the log another backend rotated away) takes the lock. Whether the log grew past its
        size or another backend rotated it is looked at every AUDIT_CHECK_SECONDS, not per line."""
        line = self.line_of(record)
        now = time.monotonic()
        if self.audit_fd is None or now >= self.audit_checked_until:
            path = self.audit_path()
            try:
                st = os.stat(path)
            except FileNotFoundError:
                st = None
            if self.audit_fd is None or st is None or st.st_ino != self.audit_ino or st.st_size + len(line) > AUDIT_ROTATE_BYTES:
                self.reopen_audit(path, len(line))
            self.audit_checked_until = now + AUDIT_CHECK_SECONDS
        try:
            os.write(self.audit_fd, line)
        except OSError:
            self.close_audit_file()
            raise

    def audit_path(self):
        if self.audit_file is None:
            self.audit_file = os.path.join(self.directory(), AUDIT_FILE)
        return self.audit_file

    def reopen_audit(self, path, size):
        if self.lock_fd is None:
            self.lock_fd = os.open(os.path.join(self.directory(), 'audit.lock'), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.lock_fd, fcntl.LOCK_EX)
        try:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                st = None
            if st is not None and st.st_size + size > AUDIT_ROTATE_BYTES:
                for i in range(AUDIT_KEEP - 1, 0, -1):
                    if os.path.exists('%s.%d' % (path, i)):
                        os.replace('%s.%d' % (path, i), '%s.%d' % (path, i + 1))
                os.replace(path, path + '.1')
            self.close_audit_file()
            self.audit_fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            self.audit_ino = os.fstat(self.audit_fd).st_ino
        finally:
            fcntl.flock(self.lock_fd, fcntl.LOCK_UN)

    def close_audit_file(self):
        if self.audit_fd is not None:
            try:
                os.close(self.audit_fd)
            except OSError:
                pass
        self.audit_fd = None
        self.audit_ino = None

    def record_quietly(self, event):
        """A refusal is refused whether or not its record can be written."""
        try:
            self.record(event)
        except OSError:
            pass

    def tail(self, limit):
        """The last `limit` records, oldest first (for veil.audit_log)."""
        path = os.path.join(self.directory(), AUDIT_FILE)
        try:
            with open(path, 'rb') as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - min(size, max(1, limit) * 1024)))
                lines = f.read().split(b'\n')
        except FileNotFoundError:
            return []
        if size > max(1, limit) * 1024:
            lines = lines[1:]  # the first line read may be cut
        return [l.decode('ascii') for l in lines if l][-limit:]


def event_of(shape, **outcome):
    """A record's fields in their order (time and pid are filled in by line_of); never a value."""
    db, db_role, function, action, fields, table = shape
    event = {'time': None, 'pid': None, 'database': db, 'dbRole': db_role, 'function': function, 'action': action,
             'fields': field_counts(fields), 'instances': len(fields)}
    if table is not None:
        event['table'] = table
    event.update(outcome)
    return event


def field_counts(items):
    counts = {}
    for item in items:
        counts[(item[0], item[1])] = counts.get((item[0], item[1]), 0) + 1
    return [{'className': c[:64], 'propertyName': p[:64], 'count': n} for ((c, p), n) in counts.items()]
