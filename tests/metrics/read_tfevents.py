#!/usr/bin/python3
"""Reads a TensorBoard event file independently of the C++ writer, for its tests.

Standard library only: CRC-32C, TFRecord framing and the protobuf wire format are decoded
here by hand. Every record's two CRCs are checked. Prints one JSON list of events:

  [{"step": 0, "wall_time": 1700000000.1, "file_version": "brain.Event:2", "scalars": {}},
   {"step": 10, "wall_time": 1700000001.2, "scalars": {"train/loss": 0.25}}, ...]

Non-finite scalars are printed as the strings "nan", "inf", "-inf" (JSON has no such numbers).
Exit status 1 with a one-line message on stderr for a CRC mismatch, a truncated record or a
malformed message.

usage: read_tfevents.py EVENT_FILE
"""

import json
import math
import struct
import sys


class ReadError(Exception):
    pass


def _make_crc32c_table():
    # Reflected Castagnoli polynomial, bit by bit; written apart from the C++ table on purpose.
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C_TABLE = _make_crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(blob):
    """Yields the data of each TFRecord in blob, checking both CRCs."""
    offset = 0
    index = 0
    while offset < len(blob):
        if len(blob) - offset < 12:
            raise ReadError(f"record {index} at offset {offset}: truncated header")
        length_bytes = blob[offset:offset + 8]
        (length,) = struct.unpack("<Q", length_bytes)
        (length_crc,) = struct.unpack("<I", blob[offset + 8:offset + 12])
        if length_crc != masked_crc32c(length_bytes):
            raise ReadError(f"record {index} at offset {offset}: length CRC mismatch")
        start = offset + 12
        if len(blob) - start < length + 4:
            raise ReadError(f"record {index} at offset {offset}: truncated data")
        data = blob[start:start + length]
        (data_crc,) = struct.unpack("<I", blob[start + length:start + length + 4])
        if data_crc != masked_crc32c(data):
            raise ReadError(f"record {index} at offset {offset}: data CRC mismatch")
        yield data
        offset = start + length + 4
        index += 1


def read_varint(data, pos):
    result = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise ReadError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ReadError("varint longer than 10 bytes")


def fields(data):
    """Yields (field_number, wire_type, value) of a protobuf message.

    value is an int for varints, bytes for the fixed and length-delimited types."""
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = read_varint(data, pos)
        elif wire_type == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire_type == 2:
            length, pos = read_varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire_type == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ReadError(f"field {number} has unsupported wire type {wire_type}")
        if pos > len(data):
            raise ReadError(f"field {number} runs past the end of its message")
        yield number, wire_type, value


def expect_wire_type(message, number, wire_type, expected):
    if wire_type != expected:
        raise ReadError(f"{message} field {number} has wire type {wire_type}, expected {expected}")


def json_number(value):
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def decode_summary(data, scalars):
    # Summary { repeated Value value = 1; }  Value { string tag = 1; float simple_value = 2; }
    for number, wire_type, value in fields(data):
        if number != 1:
            continue
        expect_wire_type("Summary", number, wire_type, 2)
        tag = None
        simple_value = None
        for v_number, v_wire_type, v_value in fields(value):
            if v_number == 1:
                expect_wire_type("Summary.Value", v_number, v_wire_type, 2)
                tag = v_value.decode("utf-8")
            elif v_number == 2:
                expect_wire_type("Summary.Value", v_number, v_wire_type, 5)
                (simple_value,) = struct.unpack("<f", v_value)
        if tag is None or simple_value is None:
            raise ReadError("Summary.Value without tag or simple_value")
        scalars[tag] = json_number(simple_value)


def decode_event(data):
    # Event { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
    event = {"step": 0, "wall_time": 0.0, "scalars": {}}
    for number, wire_type, value in fields(data):
        if number == 1:
            expect_wire_type("Event", number, wire_type, 1)
            (event["wall_time"],) = struct.unpack("<d", value)
        elif number == 2:
            expect_wire_type("Event", number, wire_type, 0)
            event["step"] = value - (1 << 64) if value >= 1 << 63 else value  # two's complement
        elif number == 3:
            expect_wire_type("Event", number, wire_type, 2)
            event["file_version"] = value.decode("utf-8")
        elif number == 5:
            expect_wire_type("Event", number, wire_type, 2)
            decode_summary(value, event["scalars"])
    return event


def main(argv):
    if len(argv) != 2:
        print("usage: read_tfevents.py EVENT_FILE", file=sys.stderr)
        return 2
    path = argv[1]
    try:
        with open(path, "rb") as f:
            blob = f.read()
        events = [decode_event(record) for record in read_records(blob)]
    except (OSError, ReadError, UnicodeDecodeError) as e:
        print(f"read_tfevents: {path}: {e}", file=sys.stderr)
        return 1
    json.dump(events, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
