#!/usr/bin/env python3
"""A second implementation of the Satchel protected file format (docs/protected-file.md), written from the
document alone with the `cryptography` package: it opens a file Satchel wrote and checks every chunk, or writes one
(the document's test vectors are made with it).

    protected_file.py open FILE KEY-HEX            the plain bytes to stdout (exit 1 on any damage)
    protected_file.py write KEY-HEX KEY-ID-HEX NONCE-PREFIX-HEX CHUNK-SIZE CONTENT-TYPE METADATA-JSON < PLAIN   the file to stdout
"""
import json
import struct
import sys

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

MAGIC = b"SATCHELF"
TAG = 16


def key_check(key):
    encryptor = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return (encryptor.update(b"SATCHEL-KEYCHECK") + encryptor.finalize())[:8]


def nonce(prefix, index, flag):
    return prefix + struct.pack(">IB", index, flag)


def chunk_count(size, chunk):
    return max(1, -(-size // chunk))


def header_body(key_id, prefix, chunk, size, check, content_type, metadata):
    ctype = content_type.encode()
    meta = json.dumps(metadata, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() if metadata else b""
    length = 57 + len(ctype) + 2 + len(meta) + TAG
    return (MAGIC + bytes([1, 0]) + struct.pack(">H", length) + key_id + prefix + struct.pack(">IQ", chunk, size) + check
            + struct.pack(">H", len(ctype)) + ctype + struct.pack(">H", len(meta)) + meta)


def write(key, key_id, prefix, chunk, content_type, metadata, plain):
    body = header_body(key_id, prefix, chunk, len(plain), key_check(key), content_type, metadata)
    gcm = AESGCM(key)
    tag = gcm.encrypt(nonce(prefix, 0xFFFFFFFF, 2), b"", body)
    out = body + tag
    count = chunk_count(len(plain), chunk)
    for index in range(count):
        out += gcm.encrypt(nonce(prefix, index, 1 if index == count - 1 else 0), plain[index * chunk:(index + 1) * chunk], tag)
    return out


def open_file(data, key):
    if data[:8] != MAGIC or data[8] != 1:
        raise ValueError("not a version 1 Satchel protected file")
    (length,) = struct.unpack(">H", data[10:12])
    prefix = data[28:35]
    chunk, size = struct.unpack(">IQ", data[35:47])
    check = data[47:55]
    if check != key_check(key):
        raise ValueError("wrong key")
    body, tag = data[:length - TAG], data[length - TAG:length]
    gcm = AESGCM(key)
    gcm.decrypt(nonce(prefix, 0xFFFFFFFF, 2), tag, body)  # raises on a changed header
    count = chunk_count(size, chunk)
    if len(data) != length + size + count * TAG:
        raise ValueError("the file is cut short or extended")
    plain = b""
    offset = length
    for index in range(count):
        sealed = data[offset:offset + min(chunk, size - index * chunk) + TAG]
        plain += gcm.decrypt(nonce(prefix, index, 1 if index == count - 1 else 0), sealed, tag)
        offset += len(sealed)
    return plain


if __name__ == "__main__":
    if sys.argv[1] == "open":
        with open(sys.argv[2], "rb") as f:
            sys.stdout.buffer.write(open_file(f.read(), bytes.fromhex(sys.argv[3])))
    else:
        key, key_id, prefix = (bytes.fromhex(x) for x in sys.argv[2:5])
        sys.stdout.write(write(key, key_id, prefix, int(sys.argv[5]), sys.argv[6], json.loads(sys.argv[7]), sys.stdin.buffer.read()).hex())
