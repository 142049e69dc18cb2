package schemakit.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.Schema;

/**
 * Writer schemas fetched from the registry by id, cached per JVM (so per executor): ids are global and a
 * schema never changes under its id, so entries never expire. Only Avro schemas are parsed; schema
 * references are fetched and parsed first into the same parser, so named types resolve.
 */
public final class RegistrySchemas {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final ConcurrentHashMap<String, Schema> BY_ID = new ConcurrentHashMap<>();
  private static final int TIMEOUT_MS = 10_000;

  private RegistrySchemas() {}

  /**
   * A registry lookup failed: {@code notFound} when the registry answered 404 (the id does not exist),
   * {@code unreachable} when no URL answered usefully (connection errors, 5xx), else the schema is unusable.
   */
  public static final class LookupException extends Exception {
    public final boolean notFound;
    public final boolean unreachable;

    LookupException(String message, boolean notFound) {
      this(message, notFound, false);
    }

    LookupException(String message, boolean notFound, boolean unreachable) {
      super(message);
      this.notFound = notFound;
      this.unreachable = unreachable;
    }
  }

  /** The Avro writer schema with global id {@code id}, from the first of the comma-separated URLs that answers. */
  public static Schema writer(String urls, int id) throws LookupException {
    String key = urls + "#" + id;
    Schema cached = BY_ID.get(key);
    if (cached != null) {
      return cached;
    }
    JsonNode body = get(urls, "/schemas/ids/" + id, "schema id " + id + " is not known to the registry");
    String type = body.path("schemaType").asText("AVRO");
    if (!"AVRO".equals(type)) {
      throw new LookupException("schema " + id + " is " + type + ", not AVRO", false);
    }
    Schema.Parser parser = new Schema.Parser();
    addReferences(urls, body, parser, new HashSet<>());
    Schema schema;
    try {
      schema = parser.parse(body.path("schema").asText());
    } catch (RuntimeException e) {
      throw new LookupException("cannot parse writer schema " + id + ": " + e.getMessage(), false);
    }
    Schema raced = BY_ID.putIfAbsent(key, schema);
    return raced != null ? raced : schema;
  }

  private static void addReferences(String urls, JsonNode body, Schema.Parser parser, Set<String> seen)
      throws LookupException {
    for (JsonNode ref : body.path("references")) {
      String name = ref.path("name").asText();
      if (!seen.add(name)) {
        continue;
      }
      String subject = ref.path("subject").asText();
      String path = "/subjects/" + URLEncoder.encode(subject, StandardCharsets.UTF_8).replace("+", "%20")
          + "/versions/" + ref.path("version").asInt();
      JsonNode target = get(urls, path, "referenced schema " + subject + " version " + ref.path("version")
          + " is not known to the registry");
      addReferences(urls, target, parser, seen);
      try {
        parser.parse(target.path("schema").asText());
      } catch (RuntimeException e) {
        throw new LookupException("cannot parse referenced schema " + name + ": " + e.getMessage(), false);
      }
    }
  }

  private static JsonNode get(String urls, String path, String notFoundMessage) throws LookupException {
    StringBuilder failures = new StringBuilder();
    for (String raw : urls.split(",")) {
      String url = raw.trim();
      if (url.isEmpty()) {
        continue;
      }
      try {
        URI base = URI.create(url.endsWith("/") ? url.substring(0, url.length() - 1) : url);
        String userInfo = base.getRawUserInfo();
        URI clean = new URI(base.getScheme(), null, base.getHost(), base.getPort(), base.getPath(), null, null);
        HttpURLConnection conn = (HttpURLConnection) URI.create(clean + path).toURL().openConnection();
        conn.setConnectTimeout(TIMEOUT_MS);
        conn.setReadTimeout(TIMEOUT_MS);
        conn.setRequestProperty("Accept", "application/vnd.schemaregistry.v1+json, application/json");
        if (userInfo != null) {
          String decoded = java.net.URLDecoder.decode(userInfo, StandardCharsets.UTF_8);
          conn.setRequestProperty("Authorization", "Basic "
              + Base64.getEncoder().encodeToString(decoded.getBytes(StandardCharsets.UTF_8)));
        }
        int status = conn.getResponseCode();
        if (status == 200) {
          try (InputStream in = conn.getInputStream()) {
            return JSON.readTree(in.readAllBytes());
          }
        }
        String error = read(conn.getErrorStream());
        if (status == 404) {
          throw new LookupException(notFoundMessage + " (" + error + ")", true);
        }
        if (status < 500 && status != 408 && status != 429) {
          throw new LookupException("registry answered HTTP " + status + " for " + path + ": " + error, false);
        }
        failures.append(url).append(": HTTP ").append(status).append(' ').append(error).append("; ");
      } catch (IOException | java.net.URISyntaxException | IllegalArgumentException e) {
        failures.append(url).append(": ").append(e).append("; ");
      }
    }
    throw new LookupException("could not fetch " + path + " from the registry (" + failures + ")", false, true);
  }

  /** The error body's Confluent {@code message}, or the raw body when it is not the usual JSON envelope. */
  private static String read(InputStream in) throws IOException {
    if (in == null) {
      return "";
    }
    String text;
    try (in) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      in.transferTo(out);
      text = out.toString(StandardCharsets.UTF_8);
    }
    try {
      JsonNode message = JSON.readTree(text).path("message");
      return message.isTextual() ? message.asText() : text;
    } catch (IOException e) {
      return text;
    }
  }
}
