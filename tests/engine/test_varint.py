import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.errors import CorruptRecordError
from engine.records.varint import (
    INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN,
    decode_unsigned_varint, decode_varint, decode_varlong,
    encode_unsigned_varint, encode_varint, encode_varlong,
    size_of_unsigned_varint, size_of_varint, size_of_varlong,
    write_varint, write_varlong, zigzag_decode, zigzag_encode,
)

int32s = st.integers(INT32_MIN, INT32_MAX)
int64s = st.integers(INT64_MIN, INT64_MAX)


@pytest.mark.parametrize("n, encoded", [
    (0, "00"), (-1, "01"), (1, "02"), (-2, "03"), (63, "7e"), (-64, "7f"), (64, "8001"),
    (-65, "8101"), (8191, "fe7f"), (8192, "808001"),
    (INT32_MAX, "feffffff0f"), (INT32_MIN, "ffffffff0f"),
])
def test_varint_known_encodings(n, encoded):
    assert encode_varint(n).hex() == encoded
    assert decode_varint(bytes.fromhex(encoded)) == (n, len(encoded) // 2)


@pytest.mark.parametrize("n, encoded", [
    (0, "00"), (5, "0a"), (-1, "01"),
    (INT64_MAX, "feffffffffffffffff01"), (INT64_MIN, "ffffffffffffffffff01"),
])
def test_varlong_known_encodings(n, encoded):
    assert encode_varlong(n).hex() == encoded
    assert decode_varlong(bytes.fromhex(encoded)) == (n, len(encoded) // 2)


@given(int32s)
def test_varint_round_trips_every_int32(n):
    data = encode_varint(n)
    assert len(data) == size_of_varint(n) <= 5
    assert decode_varint(data) == (n, len(data))


@given(int64s)
def test_varlong_round_trips_every_int64(n):
    data = encode_varlong(n)
    assert len(data) == size_of_varlong(n) <= 10
    assert decode_varlong(data) == (n, len(data))


@given(st.integers(0, (1 << 64) - 1))
def test_unsigned_varint_round_trips(u):
    data = encode_unsigned_varint(u)
    assert len(data) == size_of_unsigned_varint(u)
    assert decode_unsigned_varint(data) == (u, len(data))


@given(int64s)
def test_zigzag_is_a_bijection_onto_small_magnitudes(n):
    u = zigzag_encode(n)
    assert u >= 0
    assert u == (2 * n if n >= 0 else -2 * n - 1)
    assert zigzag_decode(u) == n


@given(st.lists(int32s, max_size=20), st.binary(max_size=4))
def test_decoding_returns_the_position_after_each_number(values, prefix):
    buf = bytearray(prefix)
    for v in values:
        write_varint(buf, v)
    pos = len(prefix)
    for v in values:
        got, pos = decode_varint(buf, pos)
        assert got == v
    assert pos == len(buf)


def test_write_varlong_appends_to_the_buffer():
    buf = bytearray(b"\xaa")
    write_varlong(buf, -3)
    assert bytes(buf) == b"\xaa\x05"


@pytest.mark.parametrize("bad", [INT32_MAX + 1, INT32_MIN - 1])
def test_varint_refuses_numbers_outside_int32(bad):
    with pytest.raises(ValueError):
        encode_varint(bad)


@pytest.mark.parametrize("bad", [INT64_MAX + 1, INT64_MIN - 1])
def test_varlong_refuses_numbers_outside_int64(bad):
    with pytest.raises(ValueError):
        encode_varlong(bad)


def test_unsigned_varint_refuses_negative_numbers():
    with pytest.raises(ValueError):
        encode_unsigned_varint(-1)


@given(int64s.filter(lambda n: not -64 <= n <= 63), st.data())
def test_truncated_varlong_names_its_position(n, data):
    encoded = encode_varlong(n)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    buf = b"\x00\x00" + encoded[:cut]
    with pytest.raises(CorruptRecordError, match="position 2"):
        decode_varlong(buf, 2)


def test_varint_longer_than_five_bytes_is_corrupt():
    with pytest.raises(CorruptRecordError, match="longer than 5 bytes"):
        decode_varint(b"\x80\x80\x80\x80\x80\x01")


def test_varint_whose_fifth_byte_overflows_32_bits_is_corrupt():
    with pytest.raises(CorruptRecordError, match="32 bits"):
        decode_varint(b"\xff\xff\xff\xff\x7f")


def test_varlong_longer_than_ten_bytes_is_corrupt():
    with pytest.raises(CorruptRecordError, match="longer than 10 bytes"):
        decode_varlong(b"\x80" * 10 + b"\x01")
