package schemakit.spark;

import java.io.IOException;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.AvroRuntimeException;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;

/**
 * {@code from_registry}'s JVM engine: Confluent-framed Avro (magic 0, 4-byte big-endian schema id, body) ->
 * a Spark value of the reader schema's mapped type.
 *
 * <p>Built on the driver with the registry URL(s) and the reader schema, serialized to executors with the
 * query plan. Writer schemas come from {@link RegistrySchemas} (per-JVM cache); the writer -> reader
 * resolution ({@link GenericDatumReader}) is built once per writer id per task. PERMISSIVE returns null (or,
 * with the error column, {@code Row(null, reason)}); FAILFAST throws naming the schema id and the reason.
 */
public final class AvroRegistryDecoder implements UDF1<byte[], Object> {
  private static final long serialVersionUID = 1L;

  private final String registry;
  private final String readerSchema;
  private final String[] named;
  private final boolean failFast;
  private final boolean errorColumn;

  private transient Schema reader;
  private transient AvroRowConverter converter;
  private transient ConcurrentHashMap<Integer, Object> plans;  // id -> GenericDatumReader or failure message
  private transient BinaryDecoder decoder;

  public AvroRegistryDecoder(String registry, String readerSchema, String[] named, boolean failFast,
      boolean errorColumn) {
    this.registry = registry;
    this.readerSchema = readerSchema;
    this.named = named;
    this.failFast = failFast;
    this.errorColumn = errorColumn;
    init();  // fail on the driver, at column-building time, if the reader schema does not parse
  }

  private void init() {
    Schema.Parser parser = new Schema.Parser();
    for (String text : named) {
      parser.parse(text);
    }
    reader = parser.parse(readerSchema);
    converter = AvroRowConverter.forSchema(reader);
    plans = new ConcurrentHashMap<>();
  }

  /**
   * This decoder applied to {@code input} as a column of type {@code typeJson} (Spark's JSON form of the mapped
   * type). Built here, not through py4j, so javac picks the Java {@code udf(UDF1, DataType)} overload.
   */
  public Column column(Column input, String typeJson) {
    return functions.udf(this, DataType.fromJson(typeJson)).withName("from_registry").apply(input);
  }

  private static final class Failure {
    final String message;

    Failure(String message) {
      this.message = message;
    }
  }

  @Override
  public Object call(byte[] frame) {
    if (frame == null) {
      return null;
    }
    if (reader == null) {
      init();
    }
    if (frame.length < 5) {
      return fail(null, "payload of " + frame.length
          + " bytes is too short for the 5-byte schema-registry frame header");
    }
    if (frame[0] != 0) {
      return fail(null, String.format("unknown magic byte 0x%02x (expected 0x00): not schema-registry framed data",
          frame[0] & 0xff));
    }
    int id = ((frame[1] & 0xff) << 24) | ((frame[2] & 0xff) << 16) | ((frame[3] & 0xff) << 8) | (frame[4] & 0xff);
    Object plan = plans.get(id);
    if (plan == null) {
      plan = plan(id);
    }
    if (plan instanceof Failure) {
      return fail(id, ((Failure) plan).message);
    }
    @SuppressWarnings("unchecked")
    GenericDatumReader<Object> datumReader = (GenericDatumReader<Object>) plan;
    Object datum;
    try {
      decoder = DecoderFactory.get().binaryDecoder(frame, 5, frame.length - 5, decoder);
      datum = datumReader.read(null, decoder);
      if (!decoder.isEnd()) {
        int left = decoder.inputStream().available();
        return fail(id, left + " unread bytes after the Avro record: the payload does not match writer schema " + id);
      }
    } catch (IOException | RuntimeException e) {
      return fail(id, "cannot decode Avro payload with writer schema " + id + ": " + e);
    }
    Object value = datum == null ? null : converter.convert(datum);
    return errorColumn ? RowFactory.create(value, null) : value;
  }

  private Object plan(int id) {
    Object plan;
    try {
      Schema writer = RegistrySchemas.writer(registry, id);
      plan = new GenericDatumReader<Object>(writer, reader);
    } catch (RegistrySchemas.LookupException e) {
      if (e.unreachable) {
        // not a property of the row: fail the task (Spark retries it) rather than null out good rows
        throw new IllegalStateException("from_registry: cannot fetch writer schema " + id + ": " + e.getMessage(), e);
      }
      plan = new Failure(e.getMessage());
    } catch (AvroRuntimeException e) {
      plan = new Failure("cannot resolve writer schema " + id + " to the reader schema: " + e.getMessage());
    }
    plans.put(id, plan);
    return plan;
  }

  private Object fail(Integer id, String reason) {
    if (failFast) {
      TaskContext ctx = TaskContext.get();
      String where = ctx != null ? " of partition " + ctx.partitionId() : "";
      throw new IllegalArgumentException("from_registry (FAILFAST): cannot decode a row" + where + " ("
          + (id != null ? "schema id " + id : "no schema id") + "): " + reason);
    }
    return errorColumn ? RowFactory.create(null, reason) : null;
  }
}
