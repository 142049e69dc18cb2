package schemakit.spark;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.avro.AvroTypeException;
import org.apache.avro.LogicalType;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Resolver;
import org.apache.avro.Resolver.Action;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Readers from Avro binary (written with a writer schema) straight to Spark's internal values of the reader
 * schema's mapped type: {@link GenericInternalRow} for records, {@link UTF8String} for strings and enums,
 * {@link GenericArrayData} / {@link UnsafeArrayData} for arrays, {@link ArrayBasedMapData} for maps, Spark's
 * {@code Decimal}, days for dates, microseconds for timestamps. No Avro generic records, no {@code String}, no
 * {@code Row} conversion in between: that conversion cost more than the decoding itself.
 *
 * <p>The writer -> reader resolution is Avro's own ({@link Resolver#resolve}: field matching by name and alias,
 * defaults, promotions, enum symbol mapping, union branch selection, lazy errors for branches never written);
 * this class only turns its action tree into readers, once per writer schema. The Spark side follows
 * {@code serdes/spark/types.py}, and the reader is guided by the Spark type it must produce: a union maps to its
 * single non-null branch, to long/double for [int, long]/[float, double], else to {@code struct<member0, ...>}.
 */
final class AvroCatalystReader {
  /** Reads one value from the input. */
  @FunctionalInterface
  interface Reader {
    Object read(AvroInput in) throws IOException;
  }

  @FunctionalInterface
  private interface Step {
    void apply(AvroInput in, Object[] values) throws IOException;
  }

  private static final Object[] NO_VALUES = new Object[0];

  private AvroCatalystReader() {}

  /** A reader of values written with {@code writer}, giving {@code reader}'s mapped Spark type {@code type}. */
  static Reader forSchemas(Schema writer, Schema reader, DataType type) {
    return build(Resolver.resolve(writer, reader), type);
  }

  private static Reader build(Action action, DataType type) {
    switch (action.type) {
      case ERROR: {
        String message = action.toString();
        return in -> {
          throw new AvroTypeException(message);
        };
      }
      case WRITER_UNION:
        return writerUnion((Resolver.WriterUnion) action, type);
      case READER_UNION: {
        Resolver.ReaderUnion union = (Resolver.ReaderUnion) action;
        return branch(union.reader, union.firstMatch, type, union.actualAction);
      }
      case RECORD:
        return record((Resolver.RecordAdjust) action, (StructType) type);
      case CONTAINER:
        if (action.reader.getType() == Schema.Type.ARRAY) {
          return array((Resolver.Container) action, (ArrayType) type);
        }
        return map((Resolver.Container) action, (MapType) type);
      case ENUM:
        return enumSymbol((Resolver.EnumAdjust) action);
      case PROMOTE:
      case DO_NOTHING:
        return scalar(action.writer.getType(), action.reader, type);
      default:
        throw new IllegalArgumentException("unexpected Avro resolution step " + action.type);
    }
  }

  // -- unions ---------------------------------------------------------------------------------------------

  private static Reader writerUnion(Resolver.WriterUnion union, DataType type) {
    Reader[] branches = new Reader[union.actions.length];
    for (int i = 0; i < branches.length; i++) {
      // same union on both sides: writer branch i is reader branch i; otherwise each writer branch was resolved
      // against the whole reader schema (a ReaderUnion step when the reader is a union)
      branches[i] = union.unionEquiv ? branch(union.reader, i, type, union.actions[i]) : build(union.actions[i], type);
    }
    return in -> {
      int index = in.readInt();
      if (index < 0 || index >= branches.length) {
        throw new IOException("union branch index " + index + " out of range (the union has " + branches.length
            + " branches)");
      }
      return branches[index].read(in);
    };
  }

  /** The value of branch {@code index} of the reader union {@code union}, as the union's Spark type. */
  private static Reader branch(Schema union, int index, DataType unionType, Action inner) {
    Schema chosen = union.getTypes().get(index);
    if (chosen.getType() == Schema.Type.NULL) {
      return in -> null;
    }
    List<Integer> members = new ArrayList<>();
    for (int i = 0; i < union.getTypes().size(); i++) {
      if (union.getTypes().get(i).getType() != Schema.Type.NULL) {
        members.add(i);
      }
    }
    if (members.size() == 1) {
      return build(inner, unionType);
    }
    if (unionType instanceof StructType) {
      StructField[] fields = ((StructType) unionType).fields();
      int member = members.indexOf(index);
      Reader value = build(inner, fields[member].dataType());
      int size = fields.length;
      return in -> {
        Object[] values = new Object[size];
        values[member] = value.read(in);
        return new GenericInternalRow(values);
      };
    }
    // [int, long] -> long and [float, double] -> double: read the branch as its own type, then widen
    Reader value = build(inner, ownNumericType(chosen));
    if (unionType.equals(DataTypes.LongType)) {
      return in -> ((Number) value.read(in)).longValue();
    }
    if (unionType.equals(DataTypes.DoubleType)) {
      return in -> ((Number) value.read(in)).doubleValue();
    }
    throw new IllegalArgumentException("Avro union " + union + " does not map to Spark type " + unionType);
  }

  private static DataType ownNumericType(Schema schema) {
    switch (schema.getType()) {
      case INT:
        return DataTypes.IntegerType;
      case LONG:
        return DataTypes.LongType;
      case FLOAT:
        return DataTypes.FloatType;
      case DOUBLE:
        return DataTypes.DoubleType;
      default:
        throw new IllegalArgumentException("not a numeric Avro branch: " + schema);
    }
  }

  // -- records, arrays, maps, enums ---------------------------------------------------------------------------

  private static Reader record(Resolver.RecordAdjust adjust, StructType type) {
    StructField[] fields = type.fields();
    int size = fields.length;
    List<Step> steps = new ArrayList<>();
    int next = 0;
    for (Action action : adjust.fieldActions) {
      if (action.type == Action.Type.SKIP) {
        Schema dropped = action.writer;
        steps.add((in, values) -> skip(dropped, in));
      } else {
        int pos = adjust.readerOrder[next++].pos();
        Reader field = build(action, fields[pos].dataType());
        steps.add((in, values) -> values[pos] = field.read(in));
      }
    }
    for (; next < adjust.readerOrder.length; next++) {
      Schema.Field field = adjust.readerOrder[next];
      int pos = field.pos();
      Reader value = defaultValue(field, adjust.defaults[next - adjust.firstDefault], fields[pos].dataType());
      steps.add((in, values) -> values[pos] = value.read(in));
    }
    Step[] all = steps.toArray(new Step[0]);
    return in -> {
      Object[] values = new Object[size];
      for (Step step : all) {
        step.apply(in, values);
      }
      return new GenericInternalRow(values);
    };
  }

  /**
   * A reader field missing from the writer: its default, encoded once with the field's schema and read back with
   * this class (so it takes the same mapping). Atomic values are shared; structs, arrays and maps are read
   * afresh for each row so that no two rows share a mutable value.
   */
  private static Reader defaultValue(Schema.Field field, Object value, DataType type) {
    byte[] bytes;
    try {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
      new GenericDatumWriter<Object>(field.schema()).write(value, encoder);
      encoder.flush();
      bytes = out.toByteArray();
    } catch (IOException | RuntimeException e) {
      throw new AvroTypeException("cannot use the default of reader field " + field.name() + ": " + e.getMessage());
    }
    Reader reader = forSchemas(field.schema(), field.schema(), type);
    if (type instanceof StructType || type instanceof ArrayType || type instanceof MapType) {
      return in -> reader.read(new AvroInput(bytes, 0, bytes.length));
    }
    Object constant;
    try {
      constant = reader.read(new AvroInput(bytes, 0, bytes.length));
    } catch (IOException e) {
      throw new AvroTypeException("cannot read the default of reader field " + field.name() + ": " + e.getMessage());
    }
    return in -> constant;
  }

  private static Reader array(Resolver.Container container, ArrayType type) {
    Action items = container.elementAction;
    DataType itemType = type.elementType();
    if (items.type == Action.Type.DO_NOTHING && !type.containsNull() && items.reader.getLogicalType() == null) {
      // the common primitive arrays become Spark's flat UnsafeArrayData, not one boxed object per item
      if (items.reader.getType() == Schema.Type.INT && itemType.equals(DataTypes.IntegerType)) {
        return AvroCatalystReader::intArray;
      }
      if (items.reader.getType() == Schema.Type.LONG && itemType.equals(DataTypes.LongType)) {
        return AvroCatalystReader::longArray;
      }
      if (items.reader.getType() == Schema.Type.DOUBLE && itemType.equals(DataTypes.DoubleType)) {
        return AvroCatalystReader::doubleArray;
      }
    }
    Reader item = build(items, itemType);
    return in -> {
      long count = in.readBlockCount();
      if (count == 0) {
        return new GenericArrayData(NO_VALUES);
      }
      Object[] values = new Object[capacity(count, in)];
      int size = 0;
      while (count != 0) {
        for (long i = 0; i < count; i++) {
          if (size == values.length) {
            values = Arrays.copyOf(values, grow(size));
          }
          values[size++] = item.read(in);
        }
        count = in.readBlockCount();
      }
      return new GenericArrayData(size == values.length ? values : Arrays.copyOf(values, size));
    };
  }

  private static Object intArray(AvroInput in) throws IOException {
    long count = in.readBlockCount();
    int[] values = new int[count == 0 ? 0 : capacity(count, in)];
    int size = 0;
    while (count != 0) {
      for (long i = 0; i < count; i++) {
        if (size == values.length) {
          values = Arrays.copyOf(values, grow(size));
        }
        values[size++] = in.readInt();
      }
      count = in.readBlockCount();
    }
    return UnsafeArrayData.fromPrimitiveArray(size == values.length ? values : Arrays.copyOf(values, size));
  }

  private static Object longArray(AvroInput in) throws IOException {
    long count = in.readBlockCount();
    long[] values = new long[count == 0 ? 0 : capacity(count, in)];
    int size = 0;
    while (count != 0) {
      for (long i = 0; i < count; i++) {
        if (size == values.length) {
          values = Arrays.copyOf(values, grow(size));
        }
        values[size++] = in.readLong();
      }
      count = in.readBlockCount();
    }
    return UnsafeArrayData.fromPrimitiveArray(size == values.length ? values : Arrays.copyOf(values, size));
  }

  private static Object doubleArray(AvroInput in) throws IOException {
    long count = in.readBlockCount();
    double[] values = new double[count == 0 ? 0 : capacity(count, in)];
    int size = 0;
    while (count != 0) {
      for (long i = 0; i < count; i++) {
        if (size == values.length) {
          values = Arrays.copyOf(values, grow(size));
        }
        values[size++] = in.readDouble();
      }
      count = in.readBlockCount();
    }
    return UnsafeArrayData.fromPrimitiveArray(size == values.length ? values : Arrays.copyOf(values, size));
  }

  /** A first allocation for {@code count} items: never more than the bytes left (a corrupt count stays cheap). */
  private static int capacity(long count, AvroInput in) {
    return (int) Math.max(1, Math.min(count, Math.min(in.limit - in.pos, 1 << 16)));
  }

  private static int grow(int size) throws IOException {
    if (size >= Integer.MAX_VALUE - 16) {
      throw new IOException("Avro array or map too large for Spark");
    }
    return (int) Math.min(Integer.MAX_VALUE - 16, Math.max(8L, size * 2L));
  }

  private static Reader map(Resolver.Container container, MapType type) {
    Reader value = build(container.elementAction, type.valueType());
    return in -> {
      long count = in.readBlockCount();
      int initial = count == 0 ? 0 : capacity(count, in);
      Object[] keys = new Object[initial];
      Object[] values = new Object[initial];
      int size = 0;
      while (count != 0) {
        for (long i = 0; i < count; i++) {
          if (size == keys.length) {
            keys = Arrays.copyOf(keys, grow(size));
            values = Arrays.copyOf(values, keys.length);
          }
          keys[size] = in.readUtf8();
          values[size++] = value.read(in);
        }
        count = in.readBlockCount();
      }
      if (size != keys.length) {
        keys = Arrays.copyOf(keys, size);
        values = Arrays.copyOf(values, size);
      }
      return new ArrayBasedMapData(new GenericArrayData(keys), new GenericArrayData(values));
    };
  }

  private static Reader enumSymbol(Resolver.EnumAdjust adjust) {
    List<String> readerSymbols = adjust.reader.getEnumSymbols();
    List<String> writerSymbols = adjust.writer.getEnumSymbols();
    UTF8String[] symbols = new UTF8String[adjust.adjustments.length];
    for (int i = 0; i < symbols.length; i++) {
      int j = adjust.adjustments[i];
      symbols[i] = j < 0 ? null : UTF8String.fromString(readerSymbols.get(j));
    }
    String readerName = adjust.reader.getFullName();
    return in -> {
      int index = in.readInt();
      if (index < 0 || index >= symbols.length) {
        throw new IOException("enum index " + index + " out of range (" + symbols.length + " symbols)");
      }
      UTF8String symbol = symbols[index];
      if (symbol == null) {
        throw new AvroTypeException("enum symbol " + writerSymbols.get(index) + " is not in the reader's enum "
            + readerName + ", which has no default");
      }
      return symbol;
    };
  }

  // -- scalars -------------------------------------------------------------------------------------------------

  /** A scalar written as {@code written} read into the reader's scalar type (the same, or a promotion). */
  private static Reader scalar(Schema.Type written, Schema reader, DataType type) {
    switch (reader.getType()) {
      case NULL:
        return in -> null;
      case BOOLEAN:
        return AvroInput::readBoolean;
      case INT:  // int, date (days since the epoch), time-millis
        return AvroInput::readInt;
      case LONG: {
        long scale = microsPerUnit(reader.getLogicalType(), type);
        if (written == Schema.Type.INT) {
          return scale == 1 ? in -> (long) in.readInt() : in -> Math.multiplyExact((long) in.readInt(), scale);
        }
        return scale == 1 ? AvroInput::readLong : in -> Math.multiplyExact(in.readLong(), scale);
      }
      case FLOAT:
        switch (written) {
          case INT:
            return in -> (float) in.readInt();
          case LONG:
            return in -> (float) in.readLong();
          default:
            return AvroInput::readFloat;
        }
      case DOUBLE:
        switch (written) {
          case INT:
            return in -> (double) in.readInt();
          case LONG:
            return in -> (double) in.readLong();
          case FLOAT:
            return in -> (double) in.readFloat();
          default:
            return AvroInput::readDouble;
        }
      case STRING:  // string, uuid; bytes promote to string
        return AvroInput::readUtf8;
      case BYTES:
        return bytes(AvroInput::readBytes, type);
      case FIXED: {
        int size = reader.getFixedSize();
        return bytes(in -> in.readFixed(size), type);
      }
      default:
        throw new IllegalArgumentException("not an Avro scalar: " + reader);
    }
  }

  private static long microsPerUnit(LogicalType logical, DataType type) {
    boolean timestamp = type.equals(DataTypes.TimestampType) || type.equals(DataTypes.TimestampNTZType);
    boolean millis = logical instanceof LogicalTypes.TimestampMillis || logical instanceof LogicalTypes.LocalTimestampMillis;
    return timestamp && millis ? 1000L : 1L;
  }

  @FunctionalInterface
  private interface BytesSource {
    byte[] read(AvroInput in) throws IOException;
  }

  private static Reader bytes(BytesSource source, DataType type) {
    if (type instanceof DecimalType) {
      int precision = ((DecimalType) type).precision();
      int scale = ((DecimalType) type).scale();
      return in -> decimal(source.read(in), precision, scale);
    }
    return source::read;
  }

  /** A big-endian two's-complement unscaled value as Spark's Decimal (a long for up to 8 bytes). */
  static org.apache.spark.sql.types.Decimal decimal(byte[] bytes, int precision, int scale) {
    if (bytes.length <= 8) {
      long unscaled = bytes.length == 0 ? 0 : bytes[0];
      for (int i = 1; i < bytes.length; i++) {
        unscaled = (unscaled << 8) | (bytes[i] & 0xff);
      }
      return org.apache.spark.sql.types.Decimal.apply(unscaled, precision, scale);
    }
    return org.apache.spark.sql.types.Decimal.apply(new BigDecimal(new BigInteger(bytes), scale), precision, scale);
  }

  // -- skipping writer fields the reader does not have ----------------------------------------------------------

  static void skip(Schema schema, AvroInput in) throws IOException {
    switch (schema.getType()) {
      case NULL:
        return;
      case BOOLEAN:
        in.skip(1);
        return;
      case INT:
      case LONG:
      case ENUM:
        in.readLong();
        return;
      case FLOAT:
        in.skip(4);
        return;
      case DOUBLE:
        in.skip(8);
        return;
      case STRING:
      case BYTES:
        in.skip(in.readLength());
        return;
      case FIXED:
        in.skip(schema.getFixedSize());
        return;
      case ARRAY:
        skipBlocks(in, schema.getElementType(), false);
        return;
      case MAP:
        skipBlocks(in, schema.getValueType(), true);
        return;
      case RECORD:
        for (Schema.Field field : schema.getFields()) {
          skip(field.schema(), in);
        }
        return;
      case UNION: {
        int index = in.readInt();
        if (index < 0 || index >= schema.getTypes().size()) {
          throw new IOException("union branch index " + index + " out of range");
        }
        skip(schema.getTypes().get(index), in);
        return;
      }
      default:
        throw new IllegalArgumentException("unknown Avro type " + schema.getType());
    }
  }

  private static void skipBlocks(AvroInput in, Schema items, boolean keys) throws IOException {
    for (long count = in.readLong(); count != 0; count = in.readLong()) {
      if (count < 0) {
        in.skip(in.readLong());  // the block's size in bytes is given: jump over it
        continue;
      }
      for (long i = 0; i < count; i++) {
        if (keys) {
          in.skip(in.readLength());
        }
        skip(items, in);
      }
    }
  }
}
