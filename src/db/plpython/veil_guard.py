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
# values per minute for a role without a row in veil.rate_limits (and no 'public' row)
DEFAULT_PER_MINUTE = 60000


class Guard(object):
    def __init__(self, plpy):
        self.plpy = plpy
        self.who_plan = plpy.prepare(
            'SELECT session_user::text AS db_role, pg_catalog.current_database()::text AS db, COALESCE('
            '(SELECT l.values_per_minute FROM veil.rate_limits l WHERE l.db_role = session_user), '
            '(SELECT l.values_per_minute FROM veil.rate_limits l WHERE l.db_role = \'public\'), '
            + str(DEFAULT_PER_MINUTE) + ') AS per_minute')
        self.root = None

    def directory(self):
        if self.root is None:
            data = self.plpy.execute('SELECT pg_catalog.current_setting(\'data_directory\') AS d')[0]['d']
            root = os.path.join(data, GUARD_DIR)
            os.makedirs(os.path.join(root, 'rate'), mode=0o700, exist_ok=True)
            self.root = root
        return self.root

    def call(self, function, action, items, work, table=None):
        """Runs work() (one call to veil for items) if the role's budget allows; records the outcome."""
        row = self.plpy.execute(self.who_plan)[0]
        event = {'time': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='milliseconds'),
                 'pid': os.getpid(), 'database': row['db'], 'dbRole': row['db_role'], 'function': function, 'action': action,
                 'fields': field_counts(items), 'instances': len(items)}
        if table is not None:
            event['table'] = table
        try:
            allowed = self.take(row['db_role'], row['per_minute'], len(items))
        except OSError:
            raise VeilFailure('AUDIT_UNAVAILABLE', 503, 'veil\'s rate-limit state in the data directory cannot be written, so the call was refused', retriable=True)
        if not allowed:
            event.update(outcome='refused', code='DB_RATE_LIMITED')
            self.record_quietly(event)
            raise VeilFailure('DB_RATE_LIMITED', 429, 'this database role has used its veil values per minute (veil.rate_limits)', retriable=True)
        try:
            result = work()
        except VeilFailure as f:
            event.update(outcome='refused' if f.sqlstate() == '42501' else 'failed', code=f.code)
            self.record_quietly(event)
            raise
        event['outcome'] = 'ok'
        try:
            self.record(event)
        except OSError:
            # no record, no values
            raise VeilFailure('AUDIT_UNAVAILABLE', 503, 'veil\'s database audit log cannot be written, so the call was refused', retriable=True)
        return result

    def take(self, db_role, per_minute, count):
        """Token bucket per role: per_minute values, refilled continuously; False when count exceeds it."""
        path = os.path.join(self.directory(), 'rate', db_role.encode('utf-8').hex())
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            now = time.time()
            capacity = float(per_minute)
            try:
                tokens, last = [float(x) for x in os.pread(fd, 64, 0).decode('ascii').split()]
            except ValueError:
                tokens, last = capacity, now
            tokens = min(capacity, tokens + max(0.0, now - last) * capacity / 60.0)
            allowed = count <= tokens
            if allowed:
                tokens -= count
            os.pwrite(fd, ('%.6f %.6f' % (tokens, now)).encode('ascii').ljust(64), 0)
            return allowed
        finally:
            os.close(fd)  # releases the lock

    def record(self, event):
        line = (json.dumps(event, separators=(',', ':'), ensure_ascii=True) + '\n').encode('ascii')
        root = self.directory()
        path = os.path.join(root, AUDIT_FILE)
        lock = os.open(os.path.join(root, 'audit.lock'), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                size = os.stat(path).st_size
            except FileNotFoundError:
                size = 0
            if size + len(line) > AUDIT_ROTATE_BYTES:
                for i in range(AUDIT_KEEP - 1, 0, -1):
                    if os.path.exists('%s.%d' % (path, i)):
                        os.replace('%s.%d' % (path, i), '%s.%d' % (path, i + 1))
                os.replace(path, path + '.1')
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        finally:
            os.close(lock)

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


def field_counts(items):
    counts = {}
    for (c, p, _v) in items:
        counts[(c, p)] = counts.get((c, p), 0) + 1
    return [{'className': c[:64], 'propertyName': p[:64], 'count': n} for ((c, p), n) in counts.items()]
