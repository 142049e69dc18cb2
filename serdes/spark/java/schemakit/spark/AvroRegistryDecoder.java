package schemakit.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.AvroRuntimeException;
import org.apache.avro.Schema;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import schemakit.spark.RegistryConnection.LookupException;

/**
 * {@code from_registry}'s JVM engine, one row at a time: Confluent-framed Avro (magic 0, 4-byte big-endian
 * schema id, body) -> Spark's internal value of the reader schema's mapped type.
 *
 * <p>Built on the driver from a JSON spec (reader schema(s), the mapped Spark type, registry options, mode and
 * output flags) and shipped to executors inside {@link RegistryDecodeExpression}. Per writer schema id it builds
 * a plan once: the writer schema from {@link RegistrySchemas}, Avro's resolution to the reader, compiled into an
 * {@link AvroCatalystReader}. With several reader schemas (a topic mixing record types) the value is a struct
 * with one field per record type and the writer's record name picks the field.
 *
 * <p>The result is the value itself, or {@code struct<value[, error][, writer_id, writer_version]>} with the
 * error column and/or the writer id column. PERMISSIVE gives a null value (and the reason in {@code error});
 * FAILFAST throws naming the schema id and the reason. The spec holds the registry credentials: it is never
 * printed ({@link #toString} names only the reader schemas).
 */
public final class AvroRegistryDecoder implements Serializable {
  private static final long serialVersionUID = 2L;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final String spec;

  private transient RegistryConnection registry;
  private transient Branch[] branches;
  private transient boolean branchStruct;
  private transient boolean failFast;
  private transient boolean errorColumn;
  private transient boolean writerIdColumn;
  private transient ConcurrentHashMap<Integer, Object> plans;  // id -> Plan or Failure

  /** One reader schema: the whole value, or one field of the struct of record types. */
  private static final class Branch {
    final Schema reader;
    final DataType type;
    final String subject;  // where writer versions are looked up; null when the reader was given as a schema

    Branch(Schema reader, DataType type, String subject) {
      this.reader = reader;
      this.type = type;
      this.subject = subject;
    }
  }

  private static final class Plan {
    final AvroCatalystReader.Reader reader;
    final int branch;
    final Integer version;

    Plan(AvroCatalystReader.Reader reader, int branch, Integer version) {
      this.reader = reader;
      this.branch = branch;
      this.version = version;
    }
  }

  private static final class Failure {
    final String message;

    Failure(String message) {
      this.message = message;
    }
  }

  public AvroRegistryDecoder(String spec) {
    this.spec = spec;
    init();  // fail on the driver, when the column is built, if the spec or a reader schema does not parse
  }

  private void init() {
    JsonNode root;
    try {
      root = JSON.readTree(spec);
    } catch (IOException e) {
      throw new IllegalArgumentException("from_registry: the JVM engine's spec is not JSON: " + e.getMessage());
    }
    DataType type = DataType.fromJson(root.get("type").toString());
    branchStruct = root.path("branchStruct").asBoolean(false);
    JsonNode specs = root.get("branches");
    List<Branch> list = new ArrayList<>();
    for (int i = 0; i < specs.size(); i++) {
      JsonNode b = specs.get(i);
      Schema.Parser parser = new Schema.Parser();
      for (JsonNode text : b.path("named")) {
        parser.parse(text.asText());
      }
      Schema reader = parser.parse(b.get("reader").asText());
      DataType branchType = branchStruct ? ((StructType) type).fields()[i].dataType() : type;
      String subject = b.path("subject").isTextual() ? b.get("subject").asText() : null;
      list.add(new Branch(reader, branchType, subject));
    }
    branches = list.toArray(new Branch[0]);
    failFast = root.path("failFast").asBoolean(false);
    errorColumn = root.path("errorColumn").asBoolean(false);
    writerIdColumn = root.path("writerIdColumn").asBoolean(false);
    registry = new RegistryConnection(root.get("registry"));
    plans = new ConcurrentHashMap<>();
  }

  /** The decoded value (Spark internal form) of one frame; null for a null frame. */
  public Object decode(byte[] frame) {
    if (frame == null) {
      return null;
    }
    if (plans == null) {
      init();
    }
    if (frame.length < 5) {
      return fail(null, null, "payload of " + frame.length
          + " bytes is too short for the 5-byte schema-registry frame header");
    }
    if (frame[0] != 0) {
      return fail(null, null, String.format(
          "unknown magic byte 0x%02x (expected 0x00): not schema-registry framed data", frame[0] & 0xff));
    }
    int id = ((frame[1] & 0xff) << 24) | ((frame[2] & 0xff) << 16) | ((frame[3] & 0xff) << 8) | (frame[4] & 0xff);
    Object found = plans.get(id);
    if (found == null) {
      found = plan(id);
    }
    if (found instanceof Failure) {
      return fail(id, null, ((Failure) found).message);
    }
    Plan plan = (Plan) found;
    AvroInput in = new AvroInput(frame, 5, frame.length);
    Object value;
    try {
      value = plan.reader.read(in);
    } catch (IOException | RuntimeException e) {
      return fail(id, plan.version, "cannot decode Avro payload with writer schema " + id + ": " + e);
    }
    if (in.pos != frame.length) {
      return fail(id, plan.version, (frame.length - in.pos)
          + " unread bytes after the Avro record: the payload does not match writer schema " + id);
    }
    if (branchStruct) {
      Object[] values = new Object[branches.length];
      values[plan.branch] = value;
      value = new GenericInternalRow(values);
    }
    return result(value, null, id, plan.version);
  }

  private Object plan(int id) {
    Object plan;
    try {
      Schema writer = RegistrySchemas.writer(registry, id);
      int branch = branchStruct ? route(writer) : 0;
      if (branch < 0) {
        plan = new Failure("writer schema " + id + " is " + describe(writer) + ", not one of the record types "
            + "read here (" + readerNames() + ")");
      } else {
        Branch b = branches[branch];
        AvroCatalystReader.Reader reader = AvroCatalystReader.forSchemas(writer, b.reader, b.type);
        Integer version = writerIdColumn && b.subject != null ? RegistrySchemas.version(registry, id, b.subject) : null;
        plan = new Plan(reader, branch, version);
      }
    } catch (LookupException e) {
      if (e.unreachable) {
        // not a property of the row: fail the task (Spark retries it) rather than null out good rows
        throw new IllegalStateException("from_registry: cannot fetch writer schema " + id + ": " + e.getMessage(), e);
      }
      plan = new Failure(e.getMessage());
    } catch (AvroRuntimeException | IllegalArgumentException | ClassCastException e) {
      plan = new Failure("cannot resolve writer schema " + id + " to the reader schema: " + e.getMessage());
    }
    plans.put(id, plan);
    return plan;
  }

  /** The branch whose reader record the writer's record is (by full name or a reader alias); -1 if none. */
  private int route(Schema writer) {
    if (writer.getType() != Schema.Type.RECORD) {
      return -1;
    }
    String name = writer.getFullName();
    for (int i = 0; i < branches.length; i++) {
      Schema reader = branches[i].reader;
      if (reader.getType() == Schema.Type.RECORD && (reader.getFullName().equals(name)
          || reader.getAliases().contains(name))) {
        return i;
      }
    }
    return -1;
  }

  private static String describe(Schema schema) {
    return schema.getType() == Schema.Type.RECORD ? "record " + schema.getFullName() : "a " + schema.getType();
  }

  private String readerNames() {
    List<String> names = new ArrayList<>();
    for (Branch b : branches) {
      names.add(b.reader.getFullName());
    }
    return String.join(", ", names);
  }

  private Object result(Object value, String error, Integer id, Integer version) {
    if (!errorColumn && !writerIdColumn) {
      return value;
    }
    Object[] fields = new Object[1 + (errorColumn ? 1 : 0) + (writerIdColumn ? 2 : 0)];
    int i = 0;
    fields[i++] = value;
    if (errorColumn) {
      fields[i++] = error == null ? null : UTF8String.fromString(error);
    }
    if (writerIdColumn) {
      fields[i++] = id;
      fields[i] = version;
    }
    return new GenericInternalRow(fields);
  }

  private Object fail(Integer id, Integer version, String reason) {
    if (failFast) {
      TaskContext ctx = TaskContext.get();
      String where = ctx != null ? " of partition " + ctx.partitionId() : "";
      throw new IllegalArgumentException("from_registry (FAILFAST): cannot decode a row" + where + " ("
          + (id != null ? "schema id " + id : "no schema id") + "): " + reason);
    }
    return result(null, reason, id, version);
  }

  @Override
  public String toString() {
    if (branches == null) {
      init();
    }
    return "AvroRegistryDecoder(" + readerNames() + ")";
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof AvroRegistryDecoder && spec.equals(((AvroRegistryDecoder) other).spec);
  }

  @Override
  public int hashCode() {
    return spec.hashCode();
  }
}
