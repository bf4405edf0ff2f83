# veil's leased keys inside PostgreSQL (docs/database.md, "Leased keys"): the trigger protects a
# field's values itself, with a key veil leases it over the socket, instead of one round trip per
# row. Off unless both sides say so: veil serve with VEIL_DB_SOCKET_LEASES=on, and the database
# with veil.configure_socket(path, lease => true).
#
# `veil db install` embeds this file after veil_socket.py; Client inherits LeaseCalls. The frames
# are src/db/lease-frames.ts's:
#
#   LEASE       = 0x04 dbRole:str8 role:str8 class:str8 property:str8
#   LEASE_AUDIT = 0x05 dbRole:str8 count:u16 (lease:u32 values:u32){count}
#   LEASE_GRANT = 0x83 lease:u32 validForMs:u32 budget:u32 maxChars:u32 kind:u8 header:bytes8 label:str16 key:bytes8
#   AUDITED     = 0x84 count:u16 (holds:u8){count}
#
# - veil decides a lease as it decides a PROTECT of the field (role, grant, field) and leases only
#   what this file can reproduce byte for byte: one AES-SIV or AES-GCM step under a shared key
#   (kind 1, 2). Every other field — FF1, several steps, keys scoped to a data subject — and every
#   value of a row with a subject keeps the round trip. So does an empty value (AES-SIV here takes
#   none) and one longer than veil's limit (the round trip refuses it as before).
# - The output is the engine's: base64url(header || V || C) for AES-SIV, with associated data
#   [header, label]; base64url(header || nonce || C || tag) for AES-GCM, with header || label and
#   a random 96-bit nonce. test/db/lease-vectors.test.ts runs this file against the engine.
# - A lease covers `budget` values and lives `validForMs`; the values protected under it are
#   reported (LEASE_AUDIT) when it ends and at the end of every statement (check_statement), and
#   veil audits them. A report veil does not take fails the statement: nothing protected under a
#   lease is committed unless veil has audited it. A lease lives no longer than the connection it
#   came on (veil forgets it when the connection closes).
# - The key never leaves this object: no message, notice, error, statistic or audit record holds it.
import base64
import os

OP_LEASE = b'\x04'
OP_LEASE_AUDIT = b'\x05'
LEASE_KINDS = (1, 2)
# a field veil leases no key for (DB_LEASE_UNAVAILABLE) is not asked again for this long
NO_LEASE_SECONDS = 60.0


class Lease(object):
    __slots__ = ('id', 'seal', 'left', 'used', 'until', 'max_chars', 'generation')


def lease_sealer(grant):
    """The engine's protect of one value under the grant, as a function of the value (text in, text out)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM, AESSIV
    header, label, key = grant['header'], grant['label'].encode('utf-8'), grant['key']
    siv = grant['kind'] == 1
    aead = AESSIV(key).encrypt if siv else AESGCM(key).encrypt
    # OpenSSL through the library's own bindings, keyed once: a third of the public API's cost per
    # value; used only when it agrees with the public API on a probe (else the public API)
    try:
        fast = openssl_sealer(siv, key)
        probe, nonce = os.urandom(24), os.urandom(12)
        if fast(nonce, probe, [header, label]) != (aead(probe, [header, label]) if siv else aead(nonce, probe, header + label)):
            fast = None
    except Exception:
        fast = None
    b64 = base64.urlsafe_b64encode
    urandom = os.urandom
    if siv:
        ad = [header, label]
        if fast is not None:
            return lambda value: b64(header + fast(None, value.encode('utf-8'), ad)).rstrip(b'=').decode('ascii')
        return lambda value: b64(header + aead(value.encode('utf-8'), ad)).rstrip(b'=').decode('ascii')
    aad = header + label

    def seal(value):
        nonce = urandom(12)
        sealed = fast(nonce, value.encode('utf-8'), [aad]) if fast is not None else aead(nonce, value.encode('utf-8'), aad)
        return b64(header + nonce + sealed).rstrip(b'=').decode('ascii')
    return seal


def openssl_sealer(siv, key):
    """seal(nonce, data, [ad, ...]): AES-SIV (V || C; nonce None) or AES-GCM (C || tag) on one kept
    EVP context. Re-initialising it with the key (SIV) or the nonce (GCM) starts a fresh message."""
    from cryptography.hazmat.backends.openssl.backend import backend
    lib, ffi = backend._lib, backend._ffi
    if siv:
        cipher = lib.EVP_CIPHER_fetch(ffi.NULL, b'aes-%d-siv' % (len(key) * 4), ffi.NULL)
        if cipher == ffi.NULL:
            raise ValueError()
        cipher = ffi.gc(cipher, lib.EVP_CIPHER_free)
    else:
        cipher = lib.EVP_get_cipherbyname(b'aes-%d-gcm' % (len(key) * 8))
    ctx = ffi.gc(lib.EVP_CIPHER_CTX_new(), lib.EVP_CIPHER_CTX_free)
    keyp = ffi.new('unsigned char[]', key)
    if lib.EVP_CipherInit_ex(ctx, cipher, ffi.NULL, keyp, ffi.NULL, 1) != 1:
        raise ValueError()
    outlen, tag = ffi.new('int *'), ffi.new('unsigned char[]', 16)
    init, update, final, ctrl = lib.EVP_CipherInit_ex, lib.EVP_CipherUpdate, lib.EVP_CipherFinal_ex, lib.EVP_CIPHER_CTX_ctrl
    get_tag, null, new, buffer = lib.EVP_CTRL_AEAD_GET_TAG, ffi.NULL, ffi.new, ffi.buffer

    def seal(nonce, data, ads):
        ok = init(ctx, null, null, keyp if siv else null, null if siv else nonce, 1) == 1
        for ad in ads:
            ok = ok and update(ctx, null, outlen, ad, len(ad)) == 1
        out = new('unsigned char[]', len(data))
        ok = ok and update(ctx, out, outlen, data, len(data)) == 1
        n = outlen[0]
        ok = ok and final(ctx, null, outlen) == 1 and ctrl(ctx, get_tag, 16, tag) == 1
        if not ok:
            backend._consume_errors()
            raise ValueError()  # an OpenSSL failure: the row fails (INTERNAL), nothing is written
        return buffer(tag, 16)[:] + buffer(out, n)[:] if siv else buffer(out, n)[:] + buffer(tag, 16)[:]
    return seal


def parse_lease_reply(kind, r):
    """('audited', [bool]) | ('lease', grant dict). The grant holds the key: it goes to lease_sealer only."""
    if kind == REPLY_AUDITED:
        holds = [r.u8() == 1 for _ in range(r.u16())]
        r.end()
        return ('audited', holds)
    g = {'lease': r.u32(), 'valid_ms': r.u32(), 'budget': r.u32(), 'max_chars': r.u32(), 'kind': r.u8()}
    g['header'] = r.raw(r.u8())
    g['label'] = r.text(r.u16())
    n = r.u8()
    if not 16 <= n <= 64:
        raise ReplyInvalid()
    g['key'] = r.raw(n)
    r.end()
    if g['kind'] not in LEASE_KINDS or not g['header'] or g['budget'] < 1:
        raise ReplyInvalid()
    return ('lease', g)


def utf16_length(value):
    """veil's value limit counts UTF-16 code units (JavaScript's length)."""
    return len(value) if value.isascii() else len(value.encode('utf-16-le')) // 2


class LeaseCalls(object):
    """Client's leased protect (Client supplies bearer, socket_call, transform_all, stats, link)."""

    def init_leases(self):
        # (veil role, class, property) -> Lease; -> until when no lease is asked for
        self.leases = {}
        self.no_lease = {}
        # the settings and database role the leases were taken with: reports go the same way
        self.lease_settings = None
        self.lease_db_role = None
        self.lease_origin = None
        self.lease_crypto = None
        # relid -> (whether its statement trigger reports the leases at the statement's end, until when)
        self.lease_tables = {}

    def crypto_available(self):
        """Whether this interpreter can seal (Debian's python3-cryptography): else no lease is ever asked for."""
        if self.lease_crypto is None:
            try:
                from cryptography.hazmat.primitives.ciphers.aead import AESGCM, AESSIV  # noqa: F401
                self.lease_crypto = True
            except ImportError:
                self.lease_crypto = False
        return self.lease_crypto

    def may_lease(self, s, relid):
        """Leases only where check_statement fires at the end of the statement to report them (the
        table's zz_veil_check, enabled as its row trigger): else the round trip, as before."""
        if not s.socket_lease:
            return False
        now = time.monotonic()
        known = self.lease_tables.get(relid)
        if known is None or now >= known[1]:
            if len(self.lease_tables) > 1024:
                self.lease_tables.clear()
            known = self.lease_tables[relid] = (self.plpy.execute(self.check_plan, [relid])[0]['deferrable'], now + CONTEXT_SECONDS)
        return known[0]

    def leased_protect(self, s, role, db_role, items):
        """items' values in order: sealed under leases where veil grants one, the rest over the round trip."""
        out = [None] * len(items)
        rest = []
        for i, item in enumerate(items):
            lease = self.lease_for(s, role, db_role, item) if item[3] is None and item[2] and self.crypto_available() else None
            if lease is None:
                rest.append(i)
                continue
            out[i] = lease.seal(item[2])
            lease.left -= 1
            lease.used += 1
            self.stats['leased'] = self.stats.get('leased', 0) + 1
        if rest:
            values = self.transform_all('Protect', role, [items[i] for i in rest], (s, {'db_role': db_role}))
            for i, value in zip(rest, values):
                out[i] = value
        return out

    def lease_for(self, s, role, db_role, item):
        """The lease that may seal this value now, taking a new one as needed; None: the round trip."""
        key = (role, item[0], item[1])
        lease = self.leases.get(key)
        now = time.monotonic()
        if lease is not None and (lease.left <= 0 or now >= lease.until or lease.generation != self.link.generation):
            self.report_leases()  # its values are reported before it is forgotten
            self.leases.pop(key, None)
            lease = None
        if lease is None:
            if self.no_lease.get(key, 0.0) > now:
                return None
            lease = self.take_lease(s, role, db_role, key, now)
            if lease is None:
                return None
        value = item[2]
        if len(value) * 2 > lease.max_chars and utf16_length(value) > lease.max_chars:
            return None
        return lease

    def take_lease(self, s, role, db_role, key, now):
        unknown = VeilFailure('FIELD_UNKNOWN', 422, 'The class or property is not configured')
        frame = framed(OP_LEASE + str8(db_role, VeilFailure('DB_ARGUMENT_INVALID', 400, 'the database role name is too long'))
                       + str8(role, VeilFailure('DB_NOT_CONFIGURED', 500, 'the protect role is longer than 255 bytes'))
                       + str8(key[1], unknown) + str8(key[2], unknown))
        origin = (s.socket_path, s.identity, db_role)
        if self.leases and self.lease_origin != origin:
            self.report_leases()  # another socket, client or role: the old leases' values go first
            self.leases.clear()
        kind, reply = self.socket_exchange(s, frame)
        if kind == 'error' and reply['code'] == 'DB_LEASE_UNAVAILABLE':
            self.no_lease[key] = now + NO_LEASE_SECONDS
            return None
        if kind == 'error':
            raise VeilFailure(reply['code'], reply['status'], reply['title'][:200], reply['retriable'], reply['pointer'] or None, key[1] + '.' + key[2])
        if kind != 'lease':
            raise unavailable('veil answered something that is not a lease')
        lease = Lease()
        lease.id, lease.left, lease.used, lease.max_chars = reply['lease'], reply['budget'], 0, reply['max_chars']
        # by this backend's clock, which started before veil's: the lease ends here first
        lease.until = now + reply['valid_ms'] / 1000.0
        lease.generation = self.link.generation
        lease.seal = lease_sealer(reply)
        reply.clear()
        self.leases[key] = lease
        self.lease_settings, self.lease_db_role, self.lease_origin = s, db_role, origin
        self.stats['leases'] = self.stats.get('leases', 0) + 1
        return lease

    def report_leases(self):
        """LEASE_AUDIT for every lease with values not yet reported; raises unless veil took the report."""
        used = [(k, l) for k, l in self.leases.items() if l.used > 0]
        if not used:
            return
        if any(l.generation != self.link.generation for _k, l in used):
            self.leases.clear()
            raise unavailable('veil cannot be reached')  # the connection the leases came on is gone, with them
        frame = framed(OP_LEASE_AUDIT + str8(self.lease_db_role, VeilFailure('DB_ARGUMENT_INVALID', 400, 'the database role name is too long'))
                       + struct.pack('>H', len(used)) + b''.join(struct.pack('>II', l.id, l.used) for _k, l in used))
        try:
            kind, reply = self.socket_exchange(self.lease_settings, frame)
        except VeilFailure:
            self.leases.clear()
            raise
        if kind != 'audited' or len(reply) != len(used):
            self.leases.clear()
            if kind == 'error':
                raise VeilFailure(reply['code'], reply['status'], reply['title'][:200], reply['retriable'])
            raise unavailable('veil answered something that is not a lease report')
        self.stats['reports'] = self.stats.get('reports', 0) + 1
        for (k, l), holds in zip(used, reply):
            l.used = 0
            if not holds:
                self.leases.pop(k, None)

