package schemakit.spark;

import java.io.EOFException;
import java.io.IOException;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Avro binary decoding over one byte array (a frame's body): only what the readers need. Every read is bounds
 * checked against {@code limit}, so a truncated body raises {@link EOFException} and the caller can check that
 * the record ended exactly at the frame's end. Strings are returned as {@link UTF8String} views of the array
 * (no copy, no {@code java.lang.String}): Spark treats binary input as immutable, as its own binary-to-string
 * cast does.
 */
final class AvroInput {
  final byte[] buf;
  int pos;
  final int limit;

  AvroInput(byte[] buf, int pos, int limit) {
    this.buf = buf;
    this.pos = pos;
    this.limit = limit;
  }

  private EOFException truncated() {
    return new EOFException("payload ends before the Avro record is complete");
  }

  long readLong() throws IOException {
    long value = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (pos >= limit) {
        throw truncated();
      }
      int b = buf[pos++];
      value |= (long) (b & 0x7f) << shift;
      if (b >= 0) {
        return (value >>> 1) ^ -(value & 1);
      }
    }
    throw new IOException("invalid Avro varint (more than 10 bytes)");
  }

  int readInt() throws IOException {
    long n = readLong();
    if (n < Integer.MIN_VALUE || n > Integer.MAX_VALUE) {
      throw new IOException("Avro int out of range: " + n);
    }
    return (int) n;
  }

  boolean readBoolean() throws IOException {
    if (pos >= limit) {
      throw truncated();
    }
    return buf[pos++] != 0;
  }

  float readFloat() throws IOException {
    require(4);
    int bits = (buf[pos] & 0xff) | (buf[pos + 1] & 0xff) << 8 | (buf[pos + 2] & 0xff) << 16 | (buf[pos + 3] & 0xff) << 24;
    pos += 4;
    return Float.intBitsToFloat(bits);
  }

  double readDouble() throws IOException {
    require(8);
    long lo = (buf[pos] & 0xffL) | (buf[pos + 1] & 0xffL) << 8 | (buf[pos + 2] & 0xffL) << 16
        | (buf[pos + 3] & 0xffL) << 24;
    long hi = (buf[pos + 4] & 0xffL) | (buf[pos + 5] & 0xffL) << 8 | (buf[pos + 6] & 0xffL) << 16
        | (buf[pos + 7] & 0xffL) << 24;
    pos += 8;
    return Double.longBitsToDouble(lo | hi << 32);
  }

  /** The length prefix of a string or bytes value, checked against what is left. */
  int readLength() throws IOException {
    long n = readLong();
    if (n < 0) {
      throw new IOException("negative Avro length " + n);
    }
    if (n > limit - pos) {
      throw truncated();
    }
    return (int) n;
  }

  UTF8String readUtf8() throws IOException {
    int n = readLength();
    UTF8String s = UTF8String.fromBytes(buf, pos, n);
    pos += n;
    return s;
  }

  byte[] readBytes() throws IOException {
    return readFixed(readLength());
  }

  byte[] readFixed(int size) throws IOException {
    require(size);
    byte[] out = java.util.Arrays.copyOfRange(buf, pos, pos + size);
    pos += size;
    return out;
  }

  void skip(long n) throws IOException {
    if (n < 0 || n > limit - pos) {
      throw truncated();
    }
    pos += (int) n;
  }

  /**
   * The item count of the next array/map block (0 ends the container). A negative count is followed by the
   * block's size in bytes, which a reader does not need.
   */
  long readBlockCount() throws IOException {
    long n = readLong();
    if (n < 0) {
      readLong();
      n = -n;
    }
    return n;
  }

  private void require(int n) throws IOException {
    if (n > limit - pos) {
      throw truncated();
    }
  }
}
