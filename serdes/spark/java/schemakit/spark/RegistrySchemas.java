package schemakit.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.Schema;
import schemakit.spark.RegistryConnection.LookupException;

/**
 * Writer schemas fetched from the registry by id, cached per JVM (so per executor): ids are global within a
 * registry cluster and a schema never changes under its id, so entries never expire. Only Avro schemas are
 * parsed; schema references are fetched and parsed first into the same parser, so named types resolve. The
 * version a schema id has under a subject is looked up on demand (writer id column) and cached once found.
 */
final class RegistrySchemas {
  private static final ConcurrentHashMap<String, Schema> BY_ID = new ConcurrentHashMap<>();
  private static final ConcurrentHashMap<String, Integer> VERSIONS = new ConcurrentHashMap<>();

  private RegistrySchemas() {}

  /** The Avro writer schema with global id {@code id}. */
  static Schema writer(RegistryConnection registry, int id) throws LookupException {
    String key = registry.cluster() + "#" + id;
    Schema cached = BY_ID.get(key);
    if (cached != null) {
      return cached;
    }
    JsonNode body = registry.get("/schemas/ids/" + id, "schema id " + id + " is not known to the registry");
    String type = body.path("schemaType").asText("AVRO");
    if (!"AVRO".equals(type)) {
      throw new LookupException("schema " + id + " is " + type + ", not AVRO", false, false);
    }
    Schema.Parser parser = new Schema.Parser();
    addReferences(registry, body, parser, new HashSet<>());
    Schema schema;
    try {
      schema = parser.parse(body.path("schema").asText());
    } catch (RuntimeException e) {
      throw new LookupException("cannot parse writer schema " + id + ": " + e.getMessage(), false, false);
    }
    Schema raced = BY_ID.putIfAbsent(key, schema);
    return raced != null ? raced : schema;
  }

  /** The version schema {@code id} has under {@code subject}, or null when it is not registered there. */
  static Integer version(RegistryConnection registry, int id, String subject) throws LookupException {
    String key = registry.cluster() + "#" + id + "#" + subject;
    Integer cached = VERSIONS.get(key);
    if (cached != null) {
      return cached;
    }
    JsonNode body;
    try {
      body = registry.get("/schemas/ids/" + id + "/versions", "schema id " + id + " is not known to the registry");
    } catch (LookupException e) {
      if (e.notFound) {
        return null;
      }
      throw e;
    }
    for (JsonNode pair : body) {
      if (subject.equals(pair.path("subject").asText())) {
        int version = pair.path("version").asInt();
        VERSIONS.put(key, version);
        return version;
      }
    }
    return null;
  }

  private static void addReferences(RegistryConnection registry, JsonNode body, Schema.Parser parser, Set<String> seen)
      throws LookupException {
    for (JsonNode ref : body.path("references")) {
      String name = ref.path("name").asText();
      if (!seen.add(name)) {
        continue;
      }
      String subject = ref.path("subject").asText();
      String path = "/subjects/" + URLEncoder.encode(subject, StandardCharsets.UTF_8).replace("+", "%20")
          + "/versions/" + ref.path("version").asInt();
      JsonNode target = registry.get(path, "referenced schema " + subject + " version " + ref.path("version")
          + " is not known to the registry");
      addReferences(registry, target, parser, seen);
      try {
        parser.parse(target.path("schema").asText());
      } catch (RuntimeException e) {
        throw new LookupException("cannot parse referenced schema " + name + ": " + e.getMessage(), false, false);
      }
    }
  }
}
