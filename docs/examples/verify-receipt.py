#!/usr/bin/env python3
"""Verify veil erasure receipts with PyJWT alone (pip install 'PyJWT[crypto]'): no veil code, no key set.

usage: verify-receipt.py JWKS [ISSUER] < receipts
  JWKS    the service's https://<veil>/.well-known/veil-receipt-keys.json, or a file `veil keys export-public --id veil-receipts` wrote
  ISSUER  when given, each receipt's iss must be it
One compact JWS a line in; each receipt's kid and claims out as a JSON line. Exits 1 at the first
receipt that does not verify, saying why on stderr.
"""
import json
import sys

import jwt

TYP = "veil-erasure-receipt+jwt"
CLAIMS = ["iss", "jti", "iat", "sub", "generation", "erasedAt", "by", "reason", "alreadyErased"]

source = sys.argv[1]
issuer = sys.argv[2] if len(sys.argv) > 2 else None
if source.startswith(("https://", "http://")):
    client = jwt.PyJWKClient(source)  # fetches the JWKS again when it meets a kid it lacks (a rotation)
    key_for = lambda receipt: client.get_signing_key_from_jwt(receipt).key
else:
    with open(source) as f:
        jwks = jwt.PyJWKSet.from_dict(json.load(f))
    key_for = lambda receipt: jwks[jwt.get_unverified_header(receipt)["kid"]].key

for line in sys.stdin:
    receipt = line.strip()
    if not receipt:
        continue
    try:
        header = jwt.get_unverified_header(receipt)
        # the JWKS also lists the token signing key: only a version of veil-receipts signs a receipt
        if header.get("typ") != TYP or not str(header.get("kid", "")).startswith("veil-receipts.v"):
            raise jwt.InvalidTokenError("not an erasure receipt of veil-receipts")
        claims = jwt.decode(receipt, key_for(receipt), algorithms=["ES256"], issuer=issuer, options={"require": CLAIMS})
        # the signed keyVersion names the key the kid picked (receipts before issue 43 lack it)
        if "keyVersion" in claims and header["kid"] != f"veil-receipts.v{claims['keyVersion']}":
            raise jwt.InvalidTokenError("keyVersion is not the version kid names")
    except (jwt.PyJWTError, KeyError) as e:
        print(f"refused: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"kid": header["kid"], **claims}))
