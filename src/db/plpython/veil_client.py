# veil's client inside PostgreSQL (PL/Python, plpython3u).
#
# `veil db install` embeds this module in each PL/Python function of schema veil; the first call in
# a backend executes it once and keeps one Client in GD, so the token and the HTTP connection live
# as long as the backend. It calls veil's HTTP Transform API (POST /transform, spec section 4.1)
# with a token from POST /connect/token (client credentials).
#
# Rules it keeps:
# - fail closed: every failure raises, so the statement errors and its transaction aborts;
# - no value in any message: errors carry veil's code, title, status and the field's class and
#   property, never the value, the token or the secret; unexpected Python errors are reported by
#   their type name only (their text can quote input);
# - one kept-alive connection per veil origin and backend, reopened when it breaks;
# - every call to veil passes the Guard (veil_guard.py): rate limit and audit per database role;
# - an error never names the failing statement: before raising, the error path sets
#   log_min_error_statement = panic for the rest of the (aborting) transaction, so the server log
#   does not show the statement's literal values; the trigger defers its failure to the end of
#   the statement (check_statement), outside COPY's error context, which would quote the row.
import http.client
import json
import time
import urllib.parse

# how long the trigger may use the settings it read (context) before reading them again
CONTEXT_SECONDS = 0.1

# veil's own limits are 10,000 instances and 4 MiB per call; stay well inside them
MAX_INSTANCES = 1000
MAX_BODY_BYTES = 1 << 20

PRIVILEGE_CODES = frozenset(['TOKEN_MISSING', 'TOKEN_INVALID', 'TOKEN_EXPIRED', 'ROLE_NOT_HELD',
                             'RIGHTS_CONTEXT_UNMATCHED', 'ACTION_NOT_GRANTED', 'DB_ROLE_UNMAPPED',
                             'DB_CREDENTIALS_REFUSED'])

HINTS = {
    'DB_NOT_CONFIGURED': 'store veil\'s URL and client credentials: veil db configure (or SELECT veil.configure(...))',
    'DB_ROLE_UNMAPPED': 'map the database role to a veil role: SELECT veil.map_role(db_role, veil_role)',
    'DB_SERVICE_UNAVAILABLE': 'veil is down or unreachable from the database server; nothing was stored, retry the transaction later',
    'DB_CREDENTIALS_REFUSED': 'check the client id and secret stored by veil db configure',
    'ACTION_NOT_GRANTED': 'the veil role used here is not granted this action on the field (rightsContexts in veil\'s configuration)',
    'RIGHTS_CONTEXT_UNMATCHED': 'no rights context of veil\'s configuration matches the veil role used here',
    'ROLE_NOT_HELD': 'the database\'s veil client does not hold the veil role used here (identity.clients in veil\'s configuration)',
    'FIELD_UNKNOWN': 'the class or property is not in veil\'s configuration',
    'RATE_LIMITED': 'veil limits calls per client; retry later',
    'DB_RATE_LIMITED': 'this database role sends veil more values per minute than veil.rate_limits allows: retry later, or raise it with veil db rate-limit',
    'AUDIT_UNAVAILABLE': 'the server cannot write veil\'s audit or rate-limit files under the data directory (pg_veil/); nothing was returned',
}


class VeilFailure(Exception):
    """A failure with veil's stable code. Its text is built from codes and names, never values."""

    def __init__(self, code, status, title, retriable=False, pointer=None, field=None, instances=(), codes=None):
        Exception.__init__(self, code)
        self.code = code
        self.status = status
        self.title = title
        self.retriable = retriable
        self.pointer = pointer
        self.field = field
        self.instances = tuple(instances)
        # each instance's own code (a call's errors can differ); the call's code where unknown
        self.codes = tuple(codes) if codes is not None else (code,) * len(self.instances)

    def only(self, code):
        """Whether every value the failure names failed with `code` (and it names some)."""
        return len(self.instances) > 0 and all(c == code for c in self.codes)

    def sqlstate(self):
        if self.code in PRIVILEGE_CODES:
            return '42501'  # insufficient_privilege
        if self.code == 'DB_NOT_CONFIGURED':
            return '55000'  # object_not_in_prerequisite_state
        if self.retriable or self.status >= 500 or self.status == 429:
            return '58000'  # system_error: veil cannot do it now
        return '22023'  # invalid_parameter_value: veil refused this input


def retry_after_of(response):
    """Retry-After in seconds (veil sends seconds), or None."""
    value = response.getheader('retry-after')
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and 0 <= seconds <= 60 else None


def unavailable(title):
    return VeilFailure('DB_SERVICE_UNAVAILABLE', 503, title, retriable=True)


class Settings(object):
    def __init__(self, row):
        self.veil_url = row['veil_url'].rstrip('/')
        self.token_url = (row['token_url'] or (self.veil_url + '/connect/token'))
        self.client_id = row['client_id']
        self.client_secret = row['client_secret']
        self.protect_role = row['protect_role']
        self.timeout = row['timeout_ms'] / 1000.0
        # Protect over veil's local socket (veil_socket.py) when set; HTTP otherwise and for Unprotect
        self.socket_path = row['socket_path']
        # protect with keys veil leases (veil_lease.py) where it grants one; only over the socket
        self.socket_lease = bool(self.socket_path) and bool(row['socket_lease'])
        self.identity = (self.veil_url, self.token_url, self.client_id, self.client_secret)


class Client(Trigger, SocketCalls, LeaseCalls, Reveal):
    def __init__(self, plpy):
        self.plpy = plpy
        self.settings_plan = plpy.prepare(
            'SELECT veil_url, token_url, client_id, client_secret, protect_role, timeout_ms, socket_path, socket_lease FROM veil.settings')
        # the settings and the guard's who (Guard.who_plan's columns) in one query: what a trigger
        # call reads once per row
        self.context_plan = plpy.prepare(
            'SELECT s.veil_url, s.token_url, s.client_id, s.client_secret, s.protect_role, s.timeout_ms, s.socket_path, s.socket_lease, '
            's.id IS NOT NULL AS configured, w.db_role, w.db, w.per_minute FROM (' + GUARD_WHO_SQL + ') w '
            'LEFT JOIN veil.settings s ON true')
        self.link = SocketLink()
        self.init_leases()
        self.cached = None
        self.cached_until = 0.0
        # the login role decides (SET ROLE cannot change session_user); an exact mapping wins over
        # one inherited through role membership
        self.role_plan = plpy.prepare(
            'SELECT DISTINCT m.veil_role, r.rolname = session_user AS exact FROM veil.role_map m '
            'JOIN pg_catalog.pg_roles r ON r.rolname = m.db_role '
            'WHERE pg_catalog.pg_has_role(session_user, r.oid, \'MEMBER\')')
        self.connections = {}
        self.token = None
        self.token_identity = None
        self.token_until = 0.0
        self.stats = {'connects': 0, 'requests': 0, 'tokens': 0, 'transforms': 0}
        # (veil role, class, property) a read view found refused, until when: a view does not ask
        # veil again for every row, and notices a changed configuration within a minute
        self.refused = {}
        # the statement that was last told it read erased values as NULL (erased_notice)
        self.erased_noticed = None
        self.guard = Guard(plpy)
        # the trigger's failure waiting for check_statement: (statement key, VeilFailure) or None
        self.pending = None
        # relid -> {column: protected value} of the last row the INSERT trigger protected; an
        # upsert's UPDATE (SET c = EXCLUDED.c) follows that row at once and must not protect it again
        self.last_insert = {}
        # the trigger's argument lists, parsed (Trigger.mapping_of)
        self.mappings = {}
        self.key_plan = plpy.prepare(
            'SELECT pg_catalog.transaction_timestamp()::text || \' \' || pg_catalog.statement_timestamp()::text AS k')
        self.check_plan = plpy.prepare(
            'SELECT pg_catalog.count(*) = 2 AND pg_catalog.count(DISTINCT t.tgenabled) = 1 AS deferrable '
            'FROM pg_catalog.pg_trigger t WHERE t.tgrelid = $1 AND t.tgname IN (\'zz_veil_protect\', \'zz_veil_check\')', ['oid'])

    # ---- settings and roles -------------------------------------------------------------------

    def settings(self):
        rows = self.plpy.execute(self.settings_plan)
        if len(rows) == 0:
            raise VeilFailure('DB_NOT_CONFIGURED', 500, 'veil\'s URL and client credentials are not configured')
        return Settings(rows[0])

    def context(self):
        """(Settings, the guard's who row) from one query, for the trigger: read again at the end of
        each statement (check_statement) and at least every CONTEXT_SECONDS, so a statement's rows
        do not each query veil.settings and veil.rate_limits."""
        now = time.monotonic()
        if self.cached is not None and now < self.cached_until:
            return self.cached
        row = self.plpy.execute(self.context_plan)[0]
        if not row['configured']:
            raise VeilFailure('DB_NOT_CONFIGURED', 500, 'veil\'s URL and client credentials are not configured')
        self.cached = (Settings(row), row)
        self.cached_until = now + CONTEXT_SECONDS
        return self.cached

    def forget_context(self):
        self.cached = None

    def mapped_role(self):
        rows = self.plpy.execute(self.role_plan)
        exact = set(r['veil_role'] for r in rows if r['exact'])
        candidates = exact or set(r['veil_role'] for r in rows)
        if len(candidates) == 1:
            return next(iter(candidates))
        if len(candidates) > 1:
            raise VeilFailure('DB_ROLE_UNMAPPED', 403, 'the database role maps to several veil roles through its memberships; map it directly')
        return None

    # ---- HTTP -----------------------------------------------------------------------------------

    def request(self, url, method, body, headers, timeout, with_retry_after=False):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ('http', 'https') or not parts.hostname:
            raise VeilFailure('DB_NOT_CONFIGURED', 500, 'veil\'s URL is not an http(s) URL')
        origin = (parts.scheme, parts.hostname, parts.port)
        path = (parts.path or '/') + ('?' + parts.query if parts.query else '')
        for attempt in (0, 1):
            conn = self.connections.get(origin)
            if conn is None:
                kind = http.client.HTTPSConnection if parts.scheme == 'https' else http.client.HTTPConnection
                conn = kind(parts.hostname, parts.port, timeout=timeout)
                self.connections[origin] = conn
            reused = conn.sock is not None
            if not reused:
                self.stats['connects'] += 1
            conn.timeout = timeout
            try:
                self.stats['requests'] += 1
                conn.request(method, path, body, headers)
                response = conn.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self.connections.pop(origin, None)
                # a kept-alive connection the server has closed meanwhile: one try on a fresh one
                if reused and attempt == 0:
                    continue
                raise unavailable('veil cannot be reached')
            if response.will_close:
                conn.close()
                self.connections.pop(origin, None)
            if not with_retry_after:
                return response.status, response.getheader('content-type', ''), data
            return response.status, response.getheader('content-type', ''), data, retry_after_of(response)
        raise unavailable('veil cannot be reached')

    def bearer(self, s, renew):
        now = time.monotonic()
        if not renew and self.token is not None and self.token_identity == s.identity and now < self.token_until:
            return self.token
        self.token = None
        form = urllib.parse.urlencode({'grant_type': 'client_credentials', 'client_id': s.client_id,
                                       'client_secret': s.client_secret})
        status, _ctype, data = self.request(s.token_url, 'POST', form, {
            'Content-Type': 'application/x-www-form-urlencoded', 'Accept': 'application/json'}, s.timeout)
        self.stats['tokens'] += 1
        if status == 200:
            try:
                doc = json.loads(data)
                token = doc['access_token']
                lifetime = float(doc.get('expires_in', 300))
            except (ValueError, KeyError, TypeError):
                raise unavailable('veil\'s token endpoint answered something that is not a token response')
            if not isinstance(token, str) or not token:
                raise unavailable('veil\'s token endpoint answered something that is not a token response')
            # renew before expiry: a token must not expire between this check and veil's
            self.token = token
            self.token_identity = s.identity
            self.token_until = now + max(lifetime - 60.0, lifetime / 2.0)
            return token
        if status in (400, 401):
            error = 'unknown'
            try:
                error = str(json.loads(data).get('error', 'unknown'))[:40]
            except (ValueError, AttributeError):
                pass
            raise VeilFailure('DB_CREDENTIALS_REFUSED', 401, 'veil refused the database\'s client credentials (' + error + ')')
        if status == 429:
            raise VeilFailure('RATE_LIMITED', 429, 'veil\'s token endpoint is rate limiting this client', retriable=True)
        raise unavailable('veil\'s token endpoint answered HTTP %d' % status)

    # ---- transform ------------------------------------------------------------------------------

    def transform(self, action, role, items, function, table=None, context=None):
        """items: [(className, propertyName, value, subject)], values not None, subject the data
        subject's id or None. Returns the values, in order.
        context: what self.context() returned, when the caller has read it already."""
        if not items:
            return []
        who = context[1] if context is not None else None
        return self.guard.call(function, action, items, lambda: self.transform_all(action, role, items, context), table, who)

    def transform_all(self, action, role, items, context=None):
        s, who = context if context is not None else (self.settings(), None)
        if s.socket_path and action == 'Protect':
            db_role = who['db_role'] if who is not None else self.guard.who()['db_role']
            call = lambda chunk, offset: self.socket_chunk(s, role, db_role, chunk, offset)
        else:
            call = lambda chunk, offset: self.transform_chunk(s, action, role, chunk, offset)
        out = []
        chunk = []
        size = 0
        subjects = set()
        for item in items:
            item_size = len(item[2]) * 4 + len(item[0]) + len(item[1]) + 80
            fresh = item[3] not in subjects
            if fresh and item[3] is not None:
                item_size += len(item[3]) * 4 + 200  # its processing context and request
            if chunk and (len(chunk) >= MAX_INSTANCES or size + item_size > MAX_BODY_BYTES or (fresh and len(subjects) >= MAX_REQUESTS)):
                out.extend(call(chunk, len(out)))
                chunk = []
                size = 0
                subjects = set()
            chunk.append(item)
            subjects.add(item[3])
            size += item_size
        if chunk:
            out.extend(call(chunk, len(out)))
        return out

    def transform_chunk(self, s, action, role, chunk, offset):
        groups = request_groups(chunk)
        body = request_body(action, role, chunk, groups)
        renewed = False
        waited = 0.0
        while True:
            token = self.bearer(s, renew=renewed)
            status, ctype, data, retry_after = self.request(s.veil_url + '/transform', 'POST', body, {
                'Content-Type': 'application/json', 'Accept': 'application/json',
                'Authorization': 'Bearer ' + token}, s.timeout, with_retry_after=True)
            # one retry with a fresh token: it may have expired or veil's signing key rotated
            if status == 401 and not renewed:
                renewed = True
                continue
            # veil's rate limit: wait as told, within the call's timeout, rather than fail a bulk
            # statement halfway; past that the statement fails (retriable)
            if status == 429 and retry_after is not None and waited + retry_after <= s.timeout:
                time.sleep(retry_after)
                waited += retry_after
                continue
            break
        self.stats['transforms'] += 1
        if status == 200:
            values = response_values(data, groups, len(chunk))
            if values is None:
                raise unavailable('veil answered something that is not a transform response')
            return values
        raise self.failure_of(status, ctype, data, chunk, offset, groups)

    def failure_of(self, status, ctype, data, chunk, offset, groups):
        problem = None
        if 'json' in ctype:
            try:
                problem = json.loads(data)
            except ValueError:
                problem = None
        if not isinstance(problem, dict) or not isinstance(problem.get('code'), str):
            if status >= 500 or status == 429:
                return unavailable('veil answered HTTP %d' % status)
            return VeilFailure('DB_SERVICE_UNAVAILABLE', 503, 'veil answered HTTP %d without a problem document' % status)
        errors = problem.get('errors') if isinstance(problem.get('errors'), list) else []
        positions = error_positions(errors, groups)
        instances = [offset + k for k, _code in positions]
        field = chunk[positions[0][0]][0] + '.' + chunk[positions[0][0]][1] if positions else None
        pointer = problem.get('pointer') if isinstance(problem.get('pointer'), str) else None
        code = problem['code'][:64]
        # veil's titles come from its catalog and never hold a value
        title = str(problem.get('title', code))[:200]
        return VeilFailure(code, status, title, bool(problem.get('retriable')), pointer, field, instances, [c for _k, c in positions])

    # ---- what the SQL functions call --------------------------------------------------------------

    def protect_values(self, function, class_name, property_name, values, subjects=None):
        return self.apply(function, 'Protect', self.settings().protect_role, class_name, property_name, values, subjects)

    def unprotect_values(self, function, class_name, property_name, values, subjects=None):
        role = self.mapped_role()
        if role is None:
            raise VeilFailure('DB_ROLE_UNMAPPED', 403, 'the database role is not mapped to a veil role')
        return self.apply(function, 'Unprotect', role, class_name, property_name, values, subjects)

    def apply(self, function, action, role, class_name, property_name, values, subjects=None):
        """subjects: None (no data subject), or each value's subject, index-aligned; a value whose
        subject is NULL is refused (SUBJECT_REQUIRED), as the trigger refuses such a row."""
        if class_name is None or property_name is None:
            raise VeilFailure('DB_ARGUMENT_INVALID', 400, 'class and property must not be NULL')
        if subjects is not None and len(subjects) != len(values):
            raise VeilFailure('DB_ARGUMENT_INVALID', 400, 'values and subjects must be arrays of one length')
        present = [i for i, v in enumerate(values) if v is not None]
        if subjects is not None and any(subjects[i] is None for i in present):
            raise VeilFailure('SUBJECT_REQUIRED', 422, 'a value\'s subject is NULL: it cannot be transformed under a subject\'s key',
                              field=class_name + '.' + property_name)
        out = list(values)
        items = [(class_name, property_name, values[i], subjects[i] if subjects is not None else None) for i in present]
        results = self.transform(action, role, items, function)
        for i, value in zip(present, results):
            out[i] = value
        return out

    def quiet_statement(self):
        """log_min_error_statement = panic until the transaction ends: the error about to be raised
        aborts it, and the server log must not show the statement's literal values. Allowed here
        because these functions run as their owner, a superuser (plpython3u)."""
        try:
            self.plpy.execute('SELECT pg_catalog.set_config(\'log_min_error_statement\', \'panic\', true)')
        except self.plpy.SPIError:
            pass

    def run(self, work):
        """Runs work(); any failure becomes a PostgreSQL error without a value in it."""
        try:
            return work()
        except VeilFailure as f:
            failure = f
        except self.plpy.SPIError:
            self.quiet_statement()
            raise
        except Exception as e:  # a bug or an unexpected library error: its text may quote input
            failure = VeilFailure('INTERNAL', 500, 'unexpected error in veil\'s database client (' + type(e).__name__ + ')')
        where = ' (' + failure.field + ')' if failure.field else ''
        detail = 'veil code %s, status %d, retriable %s' % (failure.code, failure.status, 'yes' if failure.retriable else 'no')
        if failure.pointer:
            detail += ', pointer ' + failure.pointer
        extra = {'hint': HINTS[failure.code]} if failure.code in HINTS else {}
        self.quiet_statement()
        self.plpy.error('veil: ' + failure.code + ': ' + failure.title + where, detail=detail,
                        sqlstate=failure.sqlstate(), **extra)
