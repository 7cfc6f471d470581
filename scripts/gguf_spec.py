"""GGUF as the fixture generators write it, from the specification: the
metadata value types, the header (metadata and tensor infos) and the byte
alphabet of GPT-2's BPE, in which GGUF's BPE vocabularies spell their
tokens.

scripts/gen_ggml_fixtures.py, scripts/gen_llm_models.py and
scripts/gen_tokenizer_fixtures.py import it; Python puts a script's own
folder first on the module path, so running them from anywhere finds it.
"""

import struct

GGUF_UINT8, GGUF_INT8, GGUF_UINT16, GGUF_INT16, GGUF_UINT32, GGUF_INT32, \
    GGUF_FLOAT32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY, GGUF_UINT64, GGUF_INT64, \
    GGUF_FLOAT64 = range(13)
SCALAR = {GGUF_UINT8: "<B", GGUF_INT8: "<b", GGUF_UINT16: "<H", GGUF_INT16: "<h",
          GGUF_UINT32: "<I", GGUF_INT32: "<i", GGUF_FLOAT32: "<f", GGUF_BOOL: "<?",
          GGUF_UINT64: "<Q", GGUF_INT64: "<q", GGUF_FLOAT64: "<d"}


def gguf_string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gguf_value(typ, v):
    """typ is a GGUF type, or (GGUF_ARRAY, element type) for arrays, where the
    element type may itself be such a pair."""
    if isinstance(typ, tuple):
        _, elem = typ
        head = struct.pack("<IQ", elem[0] if isinstance(elem, tuple) else elem, len(v))
        if isinstance(elem, tuple) or elem == GGUF_STRING:
            return head + b"".join(gguf_value(elem, e) for e in v)
        return head + struct.pack("<%d%s" % (len(v), SCALAR[elem][1]), *v)
    if typ == GGUF_STRING:
        return gguf_string(v)
    return struct.pack(SCALAR[typ], v)


def pad(n, align):
    return (n + align - 1) // align * align


def gguf_header(version, kvs, infos, alignment):
    """The header of a GGUF file, padded to the alignment: the metadata kvs
    [(key, type, value)] and the tensor infos [(name, ggml type id, ne,
    bytes)]. The tensors' data follow it in order, each padded to the
    alignment. Returns the header and each tensor's offset in the data."""
    out = bytearray(b"GGUF")
    out += struct.pack("<IQQ", version, len(infos), len(kvs))
    for key, typ, v in kvs:
        out += gguf_string(key)
        out += struct.pack("<I", typ[0] if isinstance(typ, tuple) else typ)
        out += gguf_value(typ, v)
    offsets, off = [], 0
    for name, type_id, ne, size in infos:
        offsets.append(off)
        out += gguf_string(name)
        out += struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
        out += struct.pack("<IQ", type_id, off)
        off += pad(size, alignment)
    out += bytes(pad(len(out), alignment) - len(out))
    return bytes(out), offsets


def gpt2_byte_chars():
    """GPT-2's bytes_to_unicode: the character standing for each byte, in
    the order of GPT-2's first 256 ids."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]
