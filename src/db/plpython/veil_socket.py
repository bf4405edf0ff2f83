# veil's database socket from inside PostgreSQL: the lean path for Protect (docs/database.md,
# "The local socket").
#
# `veil db install` embeds this file after veil_trigger.py and before veil_client.py; Client
# inherits SocketCalls. When veil.settings names a socket_path, Protect calls go over one
# persistent Unix-socket connection per backend (kept in GD with the Client) instead of one HTTP
# request each; Unprotect and reveal stay on HTTP. The grammar is src/db/socket-frames.ts's:
#
#   frame   = length:u32be payload
#   AUTH    = 0x01 version:u8(=1) token:str16
#   PROTECT = 0x02 dbRole:str8 role:str8 count:u32 (class:str8 property:str8 value:str32){count}
#   PROTECT_SUBJECTS = 0x03 dbRole:str8 role:str8 count:u32 (class:str8 property:str8 subject:str16 value:str32){count}
#   AUTH_OK = 0x81 validFor:u32
#   VALUES  = 0x82 count:u32 (value:str32){count}
#   ERROR   = 0xE0 status:u16 retriable:u8 code:str8 title:str16 pointer:str16
#                  count:u16 (instance:u32){count} retryAfter:u32
#
# A reply is read by its length, parsed strictly (UTF-8, every field present, nothing after the
# last) and checked against the call (as many values as sent); anything else closes the
# connection and fails the call closed (DB_SERVICE_UNAVAILABLE). No value is ever in a message.
import socket
import struct

OP_AUTH = b'\x01'
OP_PROTECT = b'\x02'
# each value with its data subject (keys scoped to the subject): what the trigger of a table with a subject column sends
OP_PROTECT_SUBJECTS = b'\x03'
REPLY_AUTH_OK = 0x81
REPLY_VALUES = 0x82
REPLY_ERROR = 0xE0
# leased keys (veil_lease.py)
REPLY_LEASE_GRANT = 0x83
REPLY_AUDITED = 0x84
# a reply is at most this long (values grow when protected; the server accepts 4 MiB by default)
MAX_REPLY_BYTES = 64 << 20
# errors after which veil closes the connection
CLOSING_CODES = frozenset(['REQUEST_MALFORMED', 'BODY_TOO_LARGE', 'REQUEST_TIMEOUT', 'INTERNAL'])
U32 = struct.Struct('>I')


class ReplyInvalid(Exception):
    """A reply that breaks the grammar; never carries a byte of it."""


class SocketReader(object):
    def __init__(self, data):
        self.data = data
        self.at = 0

    def take(self, n):
        if self.at + n > len(self.data):
            raise ReplyInvalid()
        start = self.at
        self.at += n
        return start

    def u8(self):
        return self.data[self.take(1)]

    def u16(self):
        return struct.unpack_from('>H', self.data, self.take(2))[0]

    def u32(self):
        return U32.unpack_from(self.data, self.take(4))[0]

    def raw(self, n):
        start = self.take(n)
        return bytes(self.data[start:start + n])

    def text(self, n):
        start = self.take(n)
        try:
            return self.data[start:start + n].decode('utf-8')
        except UnicodeDecodeError:
            raise ReplyInvalid()

    def end(self):
        if self.at != len(self.data):
            raise ReplyInvalid()


def parse_reply(data):
    """('ok', seconds) | ('values', [str]) | ('error', dict)."""
    r = SocketReader(data)
    kind = r.u8()
    if kind == REPLY_AUTH_OK:
        valid_for = r.u32()
        r.end()
        return ('ok', valid_for)
    if kind == REPLY_VALUES:
        count = r.u32()
        if count * 4 > len(data) - r.at:
            raise ReplyInvalid()
        values = [r.text(r.u32()) for _ in range(count)]
        r.end()
        return ('values', values)
    if kind == REPLY_LEASE_GRANT or kind == REPLY_AUDITED:
        return parse_lease_reply(kind, r)
    if kind != REPLY_ERROR:
        raise ReplyInvalid()
    e = {'status': r.u16(), 'retriable': r.u8() == 1}
    e['code'] = r.text(r.u8())
    e['title'] = r.text(r.u16())
    e['pointer'] = r.text(r.u16())
    e['instances'] = [r.u32() for _ in range(r.u16())]
    e['retry_after'] = r.u32()
    r.end()
    if not e['code'] or len(e['code']) > 64:
        raise ReplyInvalid()
    return ('error', e)


def str8(text, failure):
    data = text.encode('utf-8')
    if not 0 < len(data) <= 255:
        raise failure
    return bytes((len(data),)) + data


def str16(text, failure):
    """A subject id: 1 to 512 bytes (veil's rule; veil checks the rest), NULL refused before."""
    data = (text or '').encode('utf-8')
    if not 0 < len(data) <= 512:
        raise failure
    return struct.pack('>H', len(data)) + data


def framed(payload):
    return U32.pack(len(payload)) + payload


class SocketLink(object):
    """One connection to veil's database socket: its path, timeout and the token it authenticated with."""

    def __init__(self):
        self.sock = None
        self.path = None
        self.token = None
        self.timeout = None
        # counts the connections opened: leases (veil_lease.py) live as long as the one they came on
        self.generation = 0

    def open(self, path, timeout):
        self.close()
        self.generation += 1
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except OSError:
            sock.close()
            raise
        self.sock, self.path, self.timeout = sock, path, timeout

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock = None
        self.token = None

    def exchange(self, frame):
        self.sock.sendall(frame)
        (n,) = U32.unpack(self.read(4))
        if n == 0 or n > MAX_REPLY_BYTES:
            raise ReplyInvalid()
        return parse_reply(self.read(n))

    def read(self, n):
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self.sock.recv_into(view[got:], n - got)
            if k == 0:
                raise ConnectionResetError()
            got += k
        return bytes(buf)


class SocketCalls(object):
    """Client's Protect over the socket (Client supplies bearer, stats, settings)."""

    def protect_frame(self, db_role, role, chunk):
        unknown = VeilFailure('FIELD_UNKNOWN', 422, 'The class or property is not configured')
        # values without a subject go as before (PROTECT); with one, every value carries its own
        subjects = any(item[3] is not None for item in chunk)
        parts = [OP_PROTECT_SUBJECTS if subjects else OP_PROTECT,
                 str8(db_role, VeilFailure('DB_ARGUMENT_INVALID', 400, 'the database role name is too long')),
                 str8(role, VeilFailure('DB_NOT_CONFIGURED', 500, 'the protect role is longer than 255 bytes')), U32.pack(len(chunk))]
        for (c, p, v, subject) in chunk:
            value = v.encode('utf-8')
            parts.append(str8(c, unknown))
            parts.append(str8(p, unknown))
            if subjects:
                parts.append(str16(subject, VeilFailure('SUBJECT_ID_INVALID', 400, 'a subject id is empty or longer than 512 bytes')))
            parts.append(U32.pack(len(value)))
            parts.append(value)
        return framed(b''.join(parts))

    def socket_chunk(self, s, role, db_role, chunk, offset):
        kind, reply = self.socket_exchange(s, self.protect_frame(db_role, role, chunk))
        self.stats['transforms'] += 1
        if kind == 'values':
            if len(reply) != len(chunk):
                raise unavailable('veil answered something that is not a transform response')
            return reply
        instances = [offset + i for i in reply['instances'] if i < len(chunk)]
        field = None
        if reply['instances'] and reply['instances'][0] < len(chunk):
            first = chunk[reply['instances'][0]]
            field = first[0] + '.' + first[1]
        # veil's titles come from its catalog or fixed text and never hold a value
        raise VeilFailure(reply['code'], reply['status'], reply['title'][:200], reply['retriable'],
                          reply['pointer'] or None, field, instances)

    def socket_exchange(self, s, frame):
        """One frame answered: once more with a fresh token after a 401 (expired or refused), 429s waited out within the timeout."""
        renewed = False
        waited = 0.0
        while True:
            token = self.bearer(s, renew=renewed)
            kind, reply = self.socket_call(s, token, frame)
            if kind == 'error' and reply['status'] == 401 and not renewed:
                renewed = True
                continue
            if kind == 'error' and reply['status'] == 429 and 0 < reply['retry_after'] and waited + reply['retry_after'] <= s.timeout:
                time.sleep(reply['retry_after'])
                waited += reply['retry_after']
                continue
            return kind, reply

    def socket_call(self, s, token, frame):
        """One frame answered on the kept connection (opened and authenticated as needed)."""
        link = self.link
        for attempt in (0, 1):
            fresh = link.sock is None or link.path != s.socket_path
            try:
                if fresh:
                    self.stats['connects'] += 1
                    link.open(s.socket_path, s.timeout)
                elif link.timeout != s.timeout:
                    link.sock.settimeout(s.timeout)
                    link.timeout = s.timeout
                if link.token != token:
                    self.stats['requests'] += 1
                    kind, reply = link.exchange(framed(OP_AUTH + b'\x01' + struct.pack('>H', len(token)) + token.encode('ascii')))
                    if kind != 'ok':
                        link.close()
                        if kind == 'error':
                            return kind, reply
                        raise ReplyInvalid()
                    link.token = token
                self.stats['requests'] += 1
                kind, reply = link.exchange(frame)
            except ReplyInvalid:
                link.close()
                raise unavailable('veil answered something that is not a transform response')
            except socket.timeout:
                link.close()
                raise unavailable('veil did not answer in time')
            except (OSError, UnicodeEncodeError):
                link.close()
                # a kept connection veil has closed meanwhile (a restart): one try on a fresh one
                if not fresh and attempt == 0:
                    continue
                raise unavailable('veil cannot be reached')
            if kind == 'error' and reply['code'] in CLOSING_CODES:
                link.close()
            if kind == 'ok':
                link.close()
                raise unavailable('veil answered something that is not a transform response')
            return kind, reply
        raise unavailable('veil cannot be reached')
