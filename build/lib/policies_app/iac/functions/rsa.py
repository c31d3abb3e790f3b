"""rsadecrypt(): RSA PKCS #1 v1.5 decryption with a PEM private key, in pure Python.

Deterministic, so computed rather than left unknown. Keys come as PKCS #1 ("RSA PRIVATE KEY") or
PKCS #8 ("PRIVATE KEY") PEM, the formats terraform reads for RSA; a small DER reader is enough for both.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from policies_app.iac.functions.base import ArgumentError, register, want_string

_PEM = re.compile(r"-----BEGIN ([A-Z ]+)-----\s*(.*?)\s*-----END \1-----", re.DOTALL)
_RSA_ENCRYPTION_OID = bytes.fromhex("2a864886f70d010101")


def _der_element(data: bytes, position: int) -> tuple[int, bytes, int]:
    """(tag, content, position after) of the DER element starting at position."""
    if position + 2 > len(data):
        raise ArgumentError("failed to parse key: truncated DER data")
    tag, length = data[position], data[position + 1]
    position += 2
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(data[position : position + count], "big")
        position += count
    if position + length > len(data):
        raise ArgumentError("failed to parse key: truncated DER data")
    return tag, data[position : position + length], position + length


def _der_sequence(data: bytes) -> list[tuple[int, bytes]]:
    tag, content, _ = _der_element(data, 0)
    if tag != 0x30:
        raise ArgumentError("failed to parse key: a DER sequence was expected")
    items: list[tuple[int, bytes]] = []
    position = 0
    while position < len(content):
        item_tag, item, position = _der_element(content, position)
        items.append((item_tag, item))
    return items


def _pkcs1_key(der: bytes) -> tuple[int, int]:
    """(modulus n, private exponent d) of a PKCS #1 RSAPrivateKey."""
    items = _der_sequence(der)
    if len(items) < 4 or any(tag != 0x02 for tag, _ in items[:4]):
        raise ArgumentError("failed to parse key: not an RSA private key")
    return int.from_bytes(items[1][1], "big"), int.from_bytes(items[3][1], "big")


def _private_key(pem: str) -> tuple[int, int]:
    match = _PEM.search(pem)
    if not match:
        raise ArgumentError("failed to parse key: no PEM block found")
    try:
        der = base64.b64decode("".join(match.group(2).split()), validate=True)
    except (binascii.Error, ValueError):
        raise ArgumentError("failed to parse key: invalid PEM body") from None
    kind = match.group(1)
    if kind == "RSA PRIVATE KEY":
        return _pkcs1_key(der)
    if kind == "PRIVATE KEY":
        items = _der_sequence(der)
        if len(items) < 3 or _RSA_ENCRYPTION_OID not in items[1][1] or items[2][0] != 0x04:
            raise ArgumentError("failed to parse key: only RSA keys can decrypt")
        return _pkcs1_key(items[2][1])
    raise ArgumentError(f'failed to parse key: unsupported key type "{kind}"')


@register("rsadecrypt", 2)
def rsadecrypt(ciphertext: Any, private_key: Any) -> str:
    try:
        encrypted = base64.b64decode(want_string(ciphertext, "the ciphertext"), validate=True)
    except (binascii.Error, ValueError):
        raise ArgumentError("failed to decode input: the ciphertext is not valid base64") from None
    n, d = _private_key(want_string(private_key, "the private key"))
    size = (n.bit_length() + 7) // 8
    if len(encrypted) != size:
        raise ArgumentError("failed to decrypt: crypto/rsa: decryption error")
    block = pow(int.from_bytes(encrypted, "big"), d, n).to_bytes(size, "big")
    # PKCS #1 v1.5: 0x00 0x02, at least eight non-zero padding bytes, 0x00, then the message.
    separator = block.find(b"\x00", 2)
    if block[:2] != b"\x00\x02" or separator < 10:
        raise ArgumentError("failed to decrypt: crypto/rsa: decryption error")
    try:
        return block[separator + 1 :].decode("utf-8")
    except UnicodeDecodeError:
        raise ArgumentError("the decrypted message is not valid UTF-8") from None
