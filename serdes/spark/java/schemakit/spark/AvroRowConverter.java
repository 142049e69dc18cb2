package schemakit.spark;

import java.io.Serializable;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.avro.LogicalType;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericFixed;
import org.apache.avro.generic.IndexedRecord;
import org.apache.spark.sql.RowFactory;

/**
 * Avro generic datum (read with the reader schema) -> the Java value Spark converts into the mapped type.
 * Mirrors {@code serdes/spark/types.py}: records -> Row, enums/strings/uuid -> String, bytes/fixed -> byte[],
 * decimal -> BigDecimal, date -> LocalDate, timestamp-* -> Instant, local-timestamp-* -> LocalDateTime,
 * ["null", T] -> T, [int, long] -> Long, [float, double] -> Double, other unions -> Row(member0, member1, ...).
 */
abstract class AvroRowConverter implements Serializable {
  abstract Object convert(Object datum);

  static AvroRowConverter forSchema(Schema schema) {
    LogicalType logical = schema.getLogicalType();
    switch (schema.getType()) {
      case RECORD:
        return new RecordConverter(schema);
      case ENUM:
      case STRING:
        return new ToStringConverter();
      case ARRAY:
        return new ArrayConverter(forSchema(schema.getElementType()));
      case MAP:
        return new MapConverter(forSchema(schema.getValueType()));
      case UNION:
        return forUnion(schema);
      case FIXED:
      case BYTES:
        if (logical instanceof LogicalTypes.Decimal && ((LogicalTypes.Decimal) logical).getPrecision() <= 38) {
          return new DecimalConverter(((LogicalTypes.Decimal) logical).getScale());
        }
        return new BytesConverter();
      case INT:
        if (logical instanceof LogicalTypes.Date) {
          return new DateConverter();
        }
        return new IdentityConverter();
      case LONG:
        if (logical instanceof LogicalTypes.TimestampMillis) {
          return new TimestampConverter(1000L, false);
        }
        if (logical instanceof LogicalTypes.TimestampMicros) {
          return new TimestampConverter(1L, false);
        }
        if (logical instanceof LogicalTypes.LocalTimestampMillis) {
          return new TimestampConverter(1000L, true);
        }
        if (logical instanceof LogicalTypes.LocalTimestampMicros) {
          return new TimestampConverter(1L, true);
        }
        return new IdentityConverter();
      default:  // float, double, boolean, null
        return new IdentityConverter();
    }
  }

  private static AvroRowConverter forUnion(Schema union) {
    List<Schema> types = union.getTypes();
    List<Integer> members = new ArrayList<>();
    for (int i = 0; i < types.size(); i++) {
      if (types.get(i).getType() != Schema.Type.NULL) {
        members.add(i);
      }
    }
    if (members.isEmpty()) {
      return new IdentityConverter();
    }
    if (members.size() == 1) {
      return forSchema(types.get(members.get(0)));
    }
    if (members.size() == 2) {
      Schema.Type a = types.get(members.get(0)).getType();
      Schema.Type b = types.get(members.get(1)).getType();
      if ((a == Schema.Type.INT && b == Schema.Type.LONG) || (a == Schema.Type.LONG && b == Schema.Type.INT)) {
        return new WidenConverter(true);
      }
      if ((a == Schema.Type.FLOAT && b == Schema.Type.DOUBLE) || (a == Schema.Type.DOUBLE && b == Schema.Type.FLOAT)) {
        return new WidenConverter(false);
      }
    }
    return new UnionConverter(union, members);
  }

  static final class IdentityConverter extends AvroRowConverter {
    @Override
    Object convert(Object datum) {
      return datum;
    }
  }

  static final class ToStringConverter extends AvroRowConverter {
    @Override
    Object convert(Object datum) {
      return datum.toString();
    }
  }

  static final class BytesConverter extends AvroRowConverter {
    @Override
    Object convert(Object datum) {
      if (datum instanceof GenericFixed) {
        return ((GenericFixed) datum).bytes().clone();
      }
      ByteBuffer buf = ((ByteBuffer) datum).duplicate();
      byte[] out = new byte[buf.remaining()];
      buf.get(out);
      return out;
    }
  }

  static final class DecimalConverter extends AvroRowConverter {
    private final int scale;

    DecimalConverter(int scale) {
      this.scale = scale;
    }

    @Override
    Object convert(Object datum) {
      byte[] bytes = (byte[]) new BytesConverter().convert(datum);
      return new BigDecimal(new BigInteger(bytes), scale);
    }
  }

  static final class DateConverter extends AvroRowConverter {
    @Override
    Object convert(Object datum) {
      return LocalDate.ofEpochDay((Integer) datum);
    }
  }

  static final class TimestampConverter extends AvroRowConverter {
    private final long microsPerUnit;
    private final boolean local;

    TimestampConverter(long microsPerUnit, boolean local) {
      this.microsPerUnit = microsPerUnit;
      this.local = local;
    }

    @Override
    Object convert(Object datum) {
      long micros = Math.multiplyExact((Long) datum, microsPerUnit);
      Instant instant = Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L),
          Math.floorMod(micros, 1_000_000L) * 1000L);
      return local ? LocalDateTime.ofInstant(instant, ZoneOffset.UTC) : instant;
    }
  }

  static final class WidenConverter extends AvroRowConverter {
    private final boolean toLong;

    WidenConverter(boolean toLong) {
      this.toLong = toLong;
    }

    @Override
    Object convert(Object datum) {
      Number n = (Number) datum;
      return toLong ? (Object) n.longValue() : (Object) n.doubleValue();
    }
  }

  static final class RecordConverter extends AvroRowConverter {
    private final AvroRowConverter[] fields;

    RecordConverter(Schema schema) {
      List<Schema.Field> fs = schema.getFields();
      fields = new AvroRowConverter[fs.size()];
      for (int i = 0; i < fields.length; i++) {
        fields[i] = forSchema(fs.get(i).schema());
      }
    }

    @Override
    Object convert(Object datum) {
      IndexedRecord record = (IndexedRecord) datum;
      Object[] values = new Object[fields.length];
      for (int i = 0; i < values.length; i++) {
        Object v = record.get(i);
        values[i] = v == null ? null : fields[i].convert(v);
      }
      return RowFactory.create(values);
    }
  }

  static final class ArrayConverter extends AvroRowConverter {
    private final AvroRowConverter items;

    ArrayConverter(AvroRowConverter items) {
      this.items = items;
    }

    @Override
    Object convert(Object datum) {
      List<?> in = (List<?>) datum;
      List<Object> out = new ArrayList<>(in.size());
      for (Object v : in) {
        out.add(v == null ? null : items.convert(v));
      }
      return out;
    }
  }

  static final class MapConverter extends AvroRowConverter {
    private final AvroRowConverter values;

    MapConverter(AvroRowConverter values) {
      this.values = values;
    }

    @Override
    Object convert(Object datum) {
      Map<?, ?> in = (Map<?, ?>) datum;
      Map<String, Object> out = new LinkedHashMap<>(in.size() * 2);
      for (Map.Entry<?, ?> e : in.entrySet()) {
        Object v = e.getValue();
        out.put(e.getKey().toString(), v == null ? null : values.convert(v));
      }
      return out;
    }
  }

  /** A union with several non-null branches: Row(member0, member1, ...) with only the read branch set. */
  static final class UnionConverter extends AvroRowConverter {
    private final Schema union;
    private final int[] memberOfBranch;
    private final AvroRowConverter[] branches;
    private final int size;

    UnionConverter(Schema union, List<Integer> members) {
      this.union = union;
      List<Schema> types = union.getTypes();
      memberOfBranch = new int[types.size()];
      branches = new AvroRowConverter[types.size()];
      java.util.Arrays.fill(memberOfBranch, -1);
      for (int m = 0; m < members.size(); m++) {
        int branch = members.get(m);
        memberOfBranch[branch] = m;
        branches[branch] = forSchema(types.get(branch));
      }
      size = members.size();
    }

    @Override
    Object convert(Object datum) {
      int branch = GenericData.get().resolveUnion(union, datum);
      Object[] values = new Object[size];
      values[memberOfBranch[branch]] = branches[branch].convert(datum);
      return RowFactory.create(values);
    }
  }
}
