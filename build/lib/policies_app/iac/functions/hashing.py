"""Hash and crypto functions: base64sha256 base64sha512 md5 sha1 sha256 sha512 uuid uuidv5 bcrypt."""

from __future__ import annotations

import base64
import hashlib
import uuid as uuid_module
from typing import Any

from policies_app.iac.functions.base import ArgumentError, register, want_string
from policies_app.iac.values import UNKNOWN


def _hex(algorithm: str, text: Any) -> str:
    return hashlib.new(algorithm, want_string(text).encode("utf-8")).hexdigest()


def _b64(algorithm: str, text: Any) -> str:
    digest = hashlib.new(algorithm, want_string(text).encode("utf-8")).digest()
    return base64.b64encode(digest).decode("ascii")


@register("md5", 1)
def md5(text: Any) -> str:
    return _hex("md5", text)


@register("sha1", 1)
def sha1(text: Any) -> str:
    return _hex("sha1", text)


@register("sha256", 1)
def sha256(text: Any) -> str:
    return _hex("sha256", text)


@register("sha512", 1)
def sha512(text: Any) -> str:
    return _hex("sha512", text)


@register("base64sha256", 1)
def base64sha256(text: Any) -> str:
    return _b64("sha256", text)


@register("base64sha512", 1)
def base64sha512(text: Any) -> str:
    return _b64("sha512", text)


# Random or salted: Terraform itself only knows them during apply.
@register("uuid", 0)
def uuid() -> Any:
    return UNKNOWN


@register("bcrypt", 1, 2)
def bcrypt(text: Any, cost: Any = None) -> Any:
    want_string(text)
    return UNKNOWN


_NAMESPACES = {
    "dns": uuid_module.NAMESPACE_DNS,
    "url": uuid_module.NAMESPACE_URL,
    "oid": uuid_module.NAMESPACE_OID,
    "x500": uuid_module.NAMESPACE_X500,
}


@register("uuidv5", 2)
def uuidv5(namespace: Any, name: Any) -> str:
    ns = want_string(namespace, "the namespace")
    if ns in _NAMESPACES:
        space = _NAMESPACES[ns]
    else:
        try:
            space = uuid_module.UUID(ns)
        except ValueError:
            raise ArgumentError(
                f'uuidv5() doesn\'t support namespace prefix "{ns}": use dns, url, oid, x500 or a UUID'
            ) from None
    return str(uuid_module.uuid5(space, want_string(name, "the name")))
